import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import { looksLikeId } from '../kernel/ids';
import { heldLeavesOfTree, holdTree, releaseTree, rootOfGrant } from './repositories/holds';
import { keepHashesOver } from './tree-drop-hashes';

/**
 * Holds on the call trail, for an investigation: a held grant tree's records outlive retention.
 * A hold names the tree by any of its grants and keeps every grant of it, including children made
 * later. When a day is dropped, the held trees' rows of that day are copied aside first
 * (`held_call_records`), and every read of a grant's trail reads them too.
 */
export async function holdGrantTree(db: Database, clock: Clock, grantId: string): Promise<{ rootGrantId: string } | undefined> {
  const rootGrantId = looksLikeId('grant', grantId) ? await rootOfGrant(db, grantId) : undefined;
  if (!rootGrantId) return undefined;
  await holdTree(db, rootGrantId, new Date(clock.now()));
  return { rootGrantId };
}

/** Ends the hold on the tree: its copied rows go (the tree's live days stay until they expire). */
export async function releaseGrantTree(
  db: Database,
  grantId: string,
): Promise<{ rootGrantId: string; releasedRecords: number } | undefined> {
  const rootGrantId = looksLikeId('grant', grantId) ? await rootOfGrant(db, grantId) : undefined;
  if (!rootGrantId) return undefined;
  // The tree keeps proving the records kept: first the hashes that stand for the released rows' leaves.
  await keepHashesOver(db, await heldLeavesOfTree(db, rootGrantId));
  return { rootGrantId, releasedRecords: await releaseTree(db, rootGrantId) };
}
