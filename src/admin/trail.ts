import type { Database } from '../db/database';
import { systemClock } from '../kernel/clock';
import { holdGrantTree, releaseGrantTree } from '../trail/holds';
import { exportTrailDay } from '../trail/export';

/**
 * `npm run admin -- trail hold|release --grant ID` and `trail export --day DAY --out FILE`: the
 * answer printed, or undefined (the usage is printed) for a missing option. An unknown grant is
 * an error (exit 1), never a silent success.
 */
export async function trailCommand(
  db: Database,
  sub: string | undefined,
  options: { grant?: string; day?: string; out?: string },
): Promise<object | undefined> {
  if ((sub === 'hold' || sub === 'release') && options.grant) {
    const done = sub === 'hold' ? await holdGrantTree(db, systemClock, options.grant) : await releaseGrantTree(db, options.grant);
    if (!done) throw new Error(`no grant ${options.grant}`);
    return { [sub === 'hold' ? 'held' : 'released']: done };
  }
  if (sub === 'export' && options.day && options.out) {
    const exported = await exportTrailDay(db, options.day, options.out);
    return {
      ...exported,
      sha256File: `${exported.file}.sha256`,
      checkpointFile: exported.checkpoint === null ? null : `${exported.file}.checkpoint`,
      proofsFile: exported.checkpoint === null ? null : `${exported.file}.proofs`,
    };
  }
  return undefined;
}
