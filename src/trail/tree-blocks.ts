import type { Database } from '../db/database';
import { appendedBetween, BLOCK } from './repositories/tree';
import type { CheckTimes } from './repositories/leaf-records';
import type { Node } from './tree/proofs';
import type { TailCache } from './tree-tail';

/**
 * The tree's 256-leaf blocks (tree-store.ts tells the store's story): which block a node is in,
 * the leaves nodes cover, when a block's records were checked (where they are looked for first),
 * and how a replica keeps a complete block (BlockCache).
 */

export const span = (level: number) => 2 ** level;
export const blockOf = (node: Node) => Math.floor((node.index * span(node.level)) / BLOCK);

/** Merged leaf ranges `[lo, hi)` the nodes cover. */
export function leafRanges(nodes: readonly Node[]): Array<[number, number]> {
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

/**
 * The complete 256-leaf blocks a replica keeps the leaf hashes of (src/speedups/proof-blocks.ts):
 * a block's leaves never change once it is complete. Plain: none kept.
 */
export interface BlockCache {
  get(block: number): KeptBlock | undefined;
  set(block: number, kept: KeptBlock): void;
  delete(block: number): void;
  /** The partial last blocks at signed sizes (trail/tree-tail.ts); none: rebuilt for each proof. */
  tails?: TailCache;
}

export { KEPT_NODES } from './tree/block-nodes';

export interface KeptBlock {
  /**
   * The hashes of every node of the block below its level-8 root, 32 bytes each: its 256 leaves,
   * then its 128 nodes of level 1, and so on up to its 2 of level 7 (KEPT_NODES), so that a proof
   * through it reads its nodes, never hashes them again.
   */
  nodes: Buffer;
  /**
   * When its records were checked, as found when it was kept: a block's leaves were appended
   * between the same checkpoints for good, so its records are looked for there again without
   * reading the checkpoints first (a round trip less). Undefined where they were not all there.
   */
  within?: CheckTimes;
}

/**
 * Where the records of one block are looked for first (an inclusion proof's own block): around
 * when the proven leaf was appended, which the record read in the same request says. A hint, not
 * a bound: should a leaf of the block not be found there, the block is looked for as without it.
 */
export interface BlockHint {
  block: number;
  within: CheckTimes;
}

/** The check times around a leaf appended at `at`, as the checkpoints' span would bound them. */
export function checkTimesAround(leafIndex: number, at: Date): BlockHint {
  return {
    block: Math.floor(leafIndex / BLOCK),
    within: { from: new Date(at.getTime() - 2 * CHECKED_BEFORE_APPEND_MS), to: new Date(at.getTime() + CHECKED_BEFORE_APPEND_MS) },
  };
}
