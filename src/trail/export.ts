import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Database } from '../db/database';
import { presentCallRecord } from './presenters';
import { callRecordsOfDay } from './repositories/call-record-listings';
import { nextDay } from './repositories/days';
import { firstCheckpointFrom } from './repositories/tree';
import { treeReader } from './tree-store';
import { leavesOfRecord } from './tree/leaves';
import { borderRanges, rangeHashes } from './tree/proofs';

const PAGE = 2000;

export interface TrailExport {
  day: string;
  file: string;
  records: number;
  /** Hex SHA-256 of the file's bytes (the gzip), also written to `<file>.sha256`. */
  sha256: string;
  /**
   * The size of the first signed checkpoint covering every leaf of the day, whose note is written
   * to `<file>.checkpoint`, with what proves the day's records in it (`<file>.proofs`); null when
   * no checkpoint covers the day yet (no files then).
   */
  checkpoint: number | null;
}

/**
 * `<file>.proofs`: what proves every record of an archived day in the tree of its checkpoint, offline
 * (`grantctl trail verify-archive`). `leaves`: each leaf of the day's records, `[index, base64 leaf
 * hash]`; `borders`: `[lo, hi, base64 hash]` for each range of RFC 9162's split of the tree that holds
 * none of the day's leaves while the range it was split from holds some (O(log n) per edge of the
 * day). The leaves and borders rebuild the checkpoint's root, which authenticates each leaf hash;
 * each record then matches its leaves' hashes, so a record edited, removed or inserted is named.
 */
export interface TrailDayProofs {
  treeSize: number;
  leaves: Array<[number, string]>;
  borders: Array<[number, number, string]>;
}

/** The day's records, oldest first, each as the API presents it (the arguments' digest only). */
async function* dayLines(db: Database, day: string, leaves: Map<number, Buffer>): AsyncGenerator<string> {
  const from = new Date(`${day}T00:00:00Z`);
  const to = new Date(`${nextDay(day)}T00:00:00Z`);
  let after: { at: Date; uuid: string } | null = null;
  for (;;) {
    const page: Awaited<ReturnType<typeof callRecordsOfDay>> = await callRecordsOfDay(db, from, to, after, PAGE);
    for (const record of page.records) {
      const presented = presentCallRecord(record);
      for (const leaf of leavesOfRecord(presented)) leaves.set(leaf.index, leaf.hash);
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
  const leaves = new Map<number, Buffer>();
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
    const indices = [...leaves.keys()].sort((x, y) => x - y);
    const covering = await firstCheckpointFrom(db, (indices.at(-1) ?? -1) + 1);
    if (covering) {
      await writeFile(`${file}.proofs`, JSON.stringify(await dayProofs(db, covering.size, indices, leaves)));
      await writeFile(`${file}.checkpoint`, covering.note);
    } else {
      await rm(`${file}.checkpoint`, { force: true });
      await rm(`${file}.proofs`, { force: true });
    }
    await rename(partial, file);
    return { day, file, records, sha256, checkpoint: covering?.size ?? null };
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

async function dayProofs(db: Database, treeSize: number, indices: number[], leaves: Map<number, Buffer>): Promise<TrailDayProofs> {
  const borders = borderRanges(treeSize, indices);
  const hashes = await rangeHashes(borders, treeReader(db));
  return {
    treeSize,
    leaves: indices.map((index) => [index, leaves.get(index)!.toString('base64')]),
    borders: borders.map(([lo, hi], i) => [lo, hi, hashes[i]!.toString('base64')]),
  };
}
