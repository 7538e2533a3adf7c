import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { leafHash, outcomeLeaf, recordLeaf, type Checkpoint } from './trail-proofs';

/**
 * An archived day of the call trail checked against a signed checkpoint, offline (`grantctl trail
 * verify-archive`): the day's records (gzip JSON lines, as `trail export` writes them), the leaf
 * hashes and border hashes of `<archive>.proofs`. First the proofs must rebuild the checkpoint's
 * root (RFC 9162's split of the tree: a border hash stands for a range holding none of the day's
 * leaves), which authenticates each leaf hash; then every record must match its leaves and every
 * leaf have its record. The service's code is not used.
 */
export interface DayProofs {
  treeSize: number;
  leaves: Map<number, Buffer>;
  borders: Map<string, Buffer>;
}

export type ArchiveVerdict =
  { ok: true; records: number; leaves: number } | { ok: false; why: string; leafIndex?: number; callId?: string };

const node = (left: Buffer, right: Buffer) =>
  createHash('sha256')
    .update(Buffer.from([1]))
    .update(left)
    .update(right)
    .digest();

function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** Reads `<archive>.proofs`; throws saying what is not as it should be. */
export function parseDayProofs(text: string): DayProofs {
  const json = JSON.parse(text) as { treeSize?: unknown; leaves?: unknown; borders?: unknown };
  const index = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  const hash = (h: unknown) => {
    const bytes = typeof h === 'string' ? Buffer.from(h, 'base64') : Buffer.alloc(0);
    if (bytes.length !== 32) throw new Error('a hash of the proofs is not a SHA-256 hash');
    return bytes;
  };
  if (!index(json.treeSize) || !Array.isArray(json.leaves) || !Array.isArray(json.borders)) throw new Error('not the proofs of a day');
  const leaves = new Map<number, Buffer>();
  for (const leaf of json.leaves as unknown[]) {
    if (!Array.isArray(leaf) || !index(leaf[0])) throw new Error('a leaf of the proofs has no index');
    leaves.set(leaf[0] as number, hash(leaf[1]));
  }
  const borders = new Map<string, Buffer>();
  for (const border of json.borders as unknown[]) {
    if (!Array.isArray(border) || !index(border[0]) || !index(border[1])) throw new Error('a border of the proofs has no range');
    borders.set(`${border[0]}:${border[1]}`, hash(border[2]));
  }
  return { treeSize: json.treeSize as number, leaves, borders };
}

/** The root the proofs rebuild, or why they do not rebuild one. */
function rootOfProofs(proofs: DayProofs): { root: Buffer } | { why: string; leafIndex: number } {
  const used = new Set<number>();
  const walk = (lo: number, hi: number): Buffer => {
    const border = proofs.borders.get(`${lo}:${hi}`);
    if (border) return border;
    if (hi - lo === 1) {
      const leaf = proofs.leaves.get(lo);
      if (!leaf) throw Object.assign(new Error('the proofs hold neither this leaf nor a hash over it'), { leafIndex: lo });
      used.add(lo);
      return leaf;
    }
    const k = split(hi - lo);
    return node(walk(lo, lo + k), walk(lo + k, hi));
  };
  try {
    if (proofs.treeSize === 0) return { why: 'the proofs are of an empty tree', leafIndex: 0 };
    const root = walk(0, proofs.treeSize);
    const stray = [...proofs.leaves.keys()].filter((index) => !used.has(index)).sort((x, y) => x - y)[0];
    if (stray !== undefined) return { why: 'the proofs hold a leaf that a border hash already covers, or past the tree', leafIndex: stray };
    return { root };
  } catch (error) {
    return { why: (error as Error).message, leafIndex: (error as { leafIndex: number }).leafIndex };
  }
}

/** The leaves of a record as the archive holds it (the API's presentation): record leaf, and outcome leaf once reported. */
function leavesOf(record: Record<string, unknown>): Array<[number, Buffer]> {
  const leaves: Array<[number, Buffer]> = [];
  if (typeof record.leafIndex === 'number') leaves.push([record.leafIndex, leafHash(recordLeaf(record))]);
  if (typeof record.outcomeLeafIndex === 'number') {
    leaves.push([record.outcomeLeafIndex, leafHash(outcomeLeaf(record))]);
  }
  return leaves;
}

/** Checks a whole archived day against the checkpoint: the first thing wrong, by leaf index, or how much was proven. */
export async function verifyArchive(archive: string, proofs: DayProofs, checkpoint: Checkpoint): Promise<ArchiveVerdict> {
  if (proofs.treeSize !== checkpoint.size) {
    return { ok: false, why: `the proofs are for a tree of size ${proofs.treeSize}, the checkpoint's has ${checkpoint.size}` };
  }
  const rebuilt = rootOfProofs(proofs);
  if ('why' in rebuilt) return { ok: false, why: rebuilt.why, leafIndex: rebuilt.leafIndex };
  if (!rebuilt.root.equals(checkpoint.root)) return { ok: false, why: "the proofs do not rebuild the checkpoint's root" };

  const problems: Array<{ leafIndex: number; callId?: string; why: string }> = [];
  const claimed = new Set<number>();
  let records = 0;
  const lines = createInterface({ input: createReadStream(archive).pipe(createGunzip()), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    records += 1;
    const record = JSON.parse(line) as Record<string, unknown>;
    const callId = String(record.id);
    if (typeof record.leafIndex !== 'number') {
      problems.push({ leafIndex: -1, callId, why: 'has no leaf in the tree' });
      continue;
    }
    for (const [index, hash] of leavesOf(record)) {
      const signed = proofs.leaves.get(index);
      if (claimed.has(index)) problems.push({ leafIndex: index, callId, why: 'claims a leaf another record of the archive holds' });
      else if (!signed) problems.push({ leafIndex: index, callId, why: 'is not a leaf of the day in the signed tree' });
      else if (!signed.equals(hash)) problems.push({ leafIndex: index, callId, why: 'does not match its leaf in the signed tree' });
      claimed.add(index);
    }
  }
  for (const index of proofs.leaves.keys()) {
    if (!claimed.has(index)) problems.push({ leafIndex: index, why: 'is in the signed tree, but no record of the archive holds it' });
  }
  const first = problems.sort((x, y) => x.leafIndex - y.leafIndex)[0];
  if (first) return { ok: false, ...first };
  return { ok: true, records, leaves: proofs.leaves.size };
}
