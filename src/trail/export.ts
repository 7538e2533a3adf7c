import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Database } from '../db/database';
import { presentCallRecord } from './presenters';
import { callRecordsOfDay } from './repositories/call-records';
import { nextDay } from './repositories/days';
import { firstCheckpointFrom } from './repositories/tree';

const PAGE = 2000;

export interface TrailExport {
  day: string;
  file: string;
  records: number;
  /** Hex SHA-256 of the file's bytes (the gzip), also written to `<file>.sha256`. */
  sha256: string;
  /**
   * The size of the first signed checkpoint covering every leaf of the day, whose note is written
   * to `<file>.checkpoint`; null when no checkpoint covers the day yet (no file then).
   */
  checkpoint: number | null;
}

/** The day's records, oldest first, each as the API presents it (the arguments' digest only). */
async function* dayLines(db: Database, day: string, leaves: { highest: number }): AsyncGenerator<string> {
  const from = new Date(`${day}T00:00:00Z`);
  const to = new Date(`${nextDay(day)}T00:00:00Z`);
  let after: { at: Date; uuid: string } | null = null;
  for (;;) {
    const page: Awaited<ReturnType<typeof callRecordsOfDay>> = await callRecordsOfDay(db, from, to, after, PAGE);
    for (const record of page.records) {
      const presented = presentCallRecord(record);
      for (const index of [presented.leafIndex, presented.outcomeLeafIndex]) {
        if (typeof index === 'number') leaves.highest = Math.max(leaves.highest, index);
      }
      yield `${JSON.stringify(presented)}\n`;
    }
    if (page.records.length < PAGE) return;
    after = page.next;
  }
}

/**
 * Writes one UTC day of the call trail as gzip JSON lines to `file`, and its SHA-256 beside it
 * (`<file>.sha256`, as `sha256sum` writes it). Written to a temporary name and renamed, so a
 * file of that name is always a whole export; a failure leaves nothing behind and throws.
 */
export async function exportTrailDay(db: Database, day: string, file: string): Promise<TrailExport> {
  const start = /^\d{4}-\d{2}-\d{2}$/.test(day) ? new Date(`${day}T00:00:00Z`) : null;
  if (!start || Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== day) throw new RangeError(`not a day: ${day}`);
  const partial = `${file}.partial`;
  const hash = createHash('sha256');
  let records = 0;
  const leaves = { highest: -1 };
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  async function* counted() {
    for await (const line of dayLines(db, day, leaves)) {
      records += 1;
      yield line;
    }
  }
  try {
    await pipeline(counted(), createGzip(), hashing, createWriteStream(partial));
    const sha256 = hash.digest('hex');
    await writeFile(`${file}.sha256`, `${sha256}  ${path.basename(file)}\n`);
    // The first checkpoint over the day's last leaf, not the latest: the same day exports the same files.
    const covering = await firstCheckpointFrom(db, leaves.highest + 1);
    if (covering) await writeFile(`${file}.checkpoint`, covering.note);
    else await rm(`${file}.checkpoint`, { force: true });
    await rename(partial, file);
    return { day, file, records, sha256, checkpoint: covering?.size ?? null };
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
