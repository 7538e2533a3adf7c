import type { Database } from '../db/database';
import { presentCallRecord } from './presenters';
import type { CallRecordRow } from './repositories/call-record-rows';
import { callRecordsOfLeaves, type CheckTimes } from './repositories/leaf-records';
import { leavesOfDayInPartBlocks } from './repositories/days';
import { appendedBetween, BLOCK, readLowerNodes, readNodes, saveNodes, STORED_FROM_LEVEL, treeHead } from './repositories/tree';
import { leavesOfRecord, nodeHash } from './tree/leaves';
import { nodeKey, type Node, type ReadNodes } from './tree/proofs';

/**
 * The trail's tree as kept (migrations/20261126203000): hashes of level 8 and up are stored; a
 * node below is rebuilt from the leaves of its 256-leaf block, each leaf from its record (the
 * record alone rebuilds it, contract §22), or read where a dropped day left it. A proof reads
 * O(log n) stored hashes and at most a block's records (two for a consistency proof's edges).
 */

/** A node the tree can no longer rebuild: a leaf under it has no record and no stored hash over it. */
export class LeafGone extends Error {
  constructor(readonly leafIndex: number) {
    super(`leaf ${leafIndex} has no record and no stored hash covers it`);
  }
}

const span = (level: number) => 2 ** level;
const blockOf = (node: Node) => Math.floor((node.index * span(node.level)) / BLOCK);

/** Merged leaf ranges `[lo, hi)` the nodes cover. */
function leafRanges(nodes: readonly Node[]): Array<[number, number]> {
  const ranges = nodes
    .map((node): [number, number] => [node.index * span(node.level), (node.index + 1) * span(node.level)])
    .sort((x, y) => x[0] - y[0]);
  const merged: Array<[number, number]> = [];
  for (const [lo, hi] of ranges) {
    const last = merged.at(-1);
    if (last && lo <= last[1]) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return merged;
}

/**
 * How long before its leaf's append a record's check may have been made and still be looked for
 * in the days around the append first: a slow check, an outcome reported within the hour, a clock
 * somewhat behind the database's. A record older than that (an outcome reported late) is found
 * by the second look, over every day.
 */
const CHECKED_BEFORE_APPEND_MS = 3_600_000;
const CLOCK_AHEAD_MS = 300_000;

/** The span of check times the records of these leaves are first looked for in; undefined where nothing bounds it. */
export async function checkTimesOf(db: Database, ranges: ReadonlyArray<readonly [number, number]>): Promise<CheckTimes | undefined> {
  const appended = await appendedBetween(db, ranges[0]![0], ranges.at(-1)![1]);
  if (!appended.after && !appended.before) return undefined;
  return {
    from: appended.after && new Date(appended.after.getTime() - CHECKED_BEFORE_APPEND_MS),
    to: appended.before && new Date(appended.before.getTime() + CLOCK_AHEAD_MS),
  };
}

async function rebuildLower(db: Database, nodes: readonly Node[]): Promise<Map<string, Buffer>> {
  const ranges = leafRanges(nodes);
  const [stored, within] = await Promise.all([readLowerNodes(db, [...new Set(nodes.map(blockOf))]), checkTimesOf(db, ranges)]);
  if (within) {
    try {
      return hashNodes(nodes, stored, await callRecordsOfLeaves(db, ranges, within));
    } catch (error) {
      if (!(error instanceof LeafGone)) throw error;
    }
  }
  return hashNodes(nodes, stored, await callRecordsOfLeaves(db, ranges));
}

/** The nodes' hashes from the stored lower hashes and the leaves of these records. Throws LeafGone. */
function hashNodes(nodes: readonly Node[], stored: ReadonlyMap<string, Buffer>, records: CallRecordRow[]): Map<string, Buffer> {
  const known = new Map(stored);
  const leaves = new Map<number, Buffer>();
  for (const record of records) for (const leaf of leavesOfRecord(presentCallRecord(record))) leaves.set(leaf.index, leaf.hash);
  const hashOf = (level: number, index: number): Buffer => {
    const key = nodeKey({ level, index });
    const found = known.get(key);
    if (found) return found;
    let hash: Buffer | undefined;
    if (level === 0) {
      hash = leaves.get(index);
      if (!hash) throw new LeafGone(index);
    } else {
      hash = nodeHash(hashOf(level - 1, index * 2), hashOf(level - 1, index * 2 + 1));
    }
    known.set(key, hash);
    return hash;
  };
  return new Map(nodes.map((node) => [nodeKey(node), hashOf(node.level, node.index)]));
}

/** Reads the hashes of complete subtrees: stored from level 8, rebuilt below. Throws LeafGone. */
export function treeReader(db: Database): ReadNodes {
  return async (nodes) => {
    const lower = nodes.filter((node) => node.level < STORED_FROM_LEVEL);
    const [upper, rebuilt] = await Promise.all([
      readNodes(
        db,
        nodes.filter((node) => node.level >= STORED_FROM_LEVEL),
      ),
      lower.length > 0 ? rebuildLower(db, lower) : new Map<string, Buffer>(),
    ]);
    for (const [key, hash] of rebuilt) upper.set(key, hash);
    return upper;
  };
}

/**
 * Before a day is dropped: keeps the hashes of the largest complete subtrees below level 8 that
 * hold only leaves the drop takes, in the blocks it does not take whole. Proofs of the records
 * kept (those of held grants included) and consistency from sizes past the day then still build:
 * what stays of the day is O(log n) hashes at each edge and a few around each held record, not a
 * hash per leaf. Idempotent: the same subtree always hashes the same. The number kept.
 */
export async function keepDroppedSpan(db: Database, day: string, heldGrantIds: readonly string[]): Promise<number> {
  return keepHashesOver(db, await leavesOfDayInPartBlocks(db, day, heldGrantIds));
}

/**
 * Before records leave the trail (`dropped`: their leaves, sorted): keeps the hashes of the
 * largest complete subtrees below level 8 that hold only those leaves. The number kept.
 */
export async function keepHashesOver(db: Database, dropped: readonly number[]): Promise<number> {
  if (dropped.length === 0) return 0;
  const { size } = await treeHead(db);
  const countIn = (lo: number, hi: number) => firstAtLeast(dropped, hi) - firstAtLeast(dropped, lo);
  const keep: Node[] = [];
  const walk = (level: number, index: number) => {
    const [lo, hi] = [index * span(level), (index + 1) * span(level)];
    const n = countIn(lo, hi);
    if (n === 0) return;
    if (hi <= size && n === hi - lo) {
      if (level < STORED_FROM_LEVEL) keep.push({ level, index });
      return;
    }
    if (level > 0) {
      walk(level - 1, index * 2);
      walk(level - 1, index * 2 + 1);
    }
  };
  for (const block of new Set(dropped.map((leaf) => Math.floor(leaf / BLOCK)))) walk(STORED_FROM_LEVEL, block);
  const hashes = await treeReader(db)(keep);
  await saveNodes(
    db,
    keep.map((node) => ({ ...node, hash: hashes.get(nodeKey(node))! })),
  );
  return keep.length;
}

function firstAtLeast(sorted: readonly number[], value: number): number {
  let [a, b] = [0, sorted.length];
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (sorted[mid]! < value) a = mid + 1;
    else b = mid;
  }
  return a;
}
