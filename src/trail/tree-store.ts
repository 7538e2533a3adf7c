import type { Database } from '../db/database';
import { presentCallRecord } from './presenters';
import type { CallRecordRow } from './repositories/call-record-rows';
import { callRecordsOfLeaves, leavesHeld, type CheckTimes } from './repositories/leaf-records';
import { leavesOfDayInPartBlocks } from './repositories/days';
import { appendedBetween, BLOCK, readBlockHashes, readNodes, saveNodes, STORED_FROM_LEVEL, treeHead } from './repositories/tree';
import { blockNodes, keptNode } from './tree/block-nodes';
import { leavesOfRecord, nodeHash } from './tree/leaves';
import { nodeKey, type Node, type ReadNodes } from './tree/proofs';
import { fromTail, inTail, keepTail, tailBlockOf, type SignedSize, type TailCache } from './tree-tail';

export { signedSizeOf, type KeptTail, type SignedSize, type TailCache } from './tree-tail';

/**
 * The trail's tree as kept (migrations/20261126203000): hashes of level 8 and up are stored; a
 * node below is rebuilt from the leaves of its 256-leaf block, each leaf from its record (the
 * record alone rebuilds it, contract §22), or read where a dropped day left it. A proof reads
 * O(log n) stored hashes and at most a block's records (two for a consistency proof's edges), or,
 * for a complete block a replica keeps (BlockCache), only how many of its leaves still have a record.
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

/** The nodes' hashes, or undefined where a leaf under one is not among these. */
function hashNodesIfAll(
  nodes: readonly Node[],
  stored: ReadonlyMap<string, Buffer>,
  leaves: ReadonlyMap<number, Buffer>,
): Map<string, Buffer> | undefined {
  try {
    return hashNodes(nodes, stored, leaves);
  } catch (error) {
    if (error instanceof LeafGone) return undefined;
    throw error;
  }
}

/**
 * The lower nodes from the records: the ranges they cover, or (with a cache) their whole blocks,
 * so that a complete block is kept once its leaves hash to the level-8 hash the tree stored for
 * it (what the signed checkpoints commit to). The stored lower hashes and the level-8 hashes are
 * read at once with the records around the hint's time (given one) or when the checkpoints say
 * the leaves were appended. The records are read only where the stored hashes do not already
 * answer; where a leaf is not found, they are looked for among the checks the checkpoints bound
 * (after a hint), then among every day.
 */
async function rebuildLower(
  db: Database,
  nodes: readonly Node[],
  cache?: BlockCache,
  hint?: CheckTimes,
  signed?: SignedSize,
): Promise<Map<string, Buffer>> {
  const blocks = [...new Set(nodes.map(blockOf))];
  const ranges = cache ? leafRanges(blocks.map((block) => ({ level: STORED_FROM_LEVEL, index: block }))) : leafRanges(nodes);
  const [{ lower: stored, roots: upper }, hinted, bounded] = await Promise.all([
    readBlockHashes(db, blocks, !!cache),
    hint ? callRecordsOfLeaves(db, ranges, hint) : undefined,
    hint ? undefined : checkTimesOf(db, ranges),
  ]);
  // Where the stored hashes answer alone (a dropped day's edge), no record is read; no block is kept either.
  const fromStored = hinted ? undefined : hashNodesIfAll(nodes, stored, new Map());
  if (fromStored) return fromStored;
  let leaves = hinted ? leavesOf(hinted) : new Map<number, Buffer>();
  let hashes = hinted ? hashNodesIfAll(nodes, stored, leaves) : undefined;
  let found = hashes ? hint : undefined;
  if (!hashes) {
    const within = hint ? await checkTimesOf(db, ranges) : bounded;
    if (within) {
      leaves = leavesOf(await callRecordsOfLeaves(db, ranges, within));
      hashes = hashNodesIfAll(nodes, stored, leaves);
      found = within;
    }
  }
  if (!hashes) {
    leaves = leavesOf(await callRecordsOfLeaves(db, ranges));
    hashes = hashNodes(nodes, stored, leaves);
    found = undefined;
  }
  if (cache) for (const block of blocks) keepIfComplete(cache, block, { stored, upper, leaves, within: found });
  const tail = tailBlockOf(signed);
  if (cache?.tails && tail !== undefined && blocks.includes(tail))
    await keepTail(db, cache.tails, signed!, { stored, leaves, within: found });
  return hashes;
}

/** Keeps a block's node hashes when its leaves are all from records and hash to the stored level-8 hash. */
function keepIfComplete(
  cache: BlockCache,
  block: number,
  read: {
    stored: ReadonlyMap<string, Buffer>;
    upper: ReadonlyMap<string, Buffer>;
    leaves: ReadonlyMap<number, Buffer>;
    within: CheckTimes | undefined;
  },
): void {
  const { stored, upper, leaves, within } = read;
  const expected = upper.get(nodeKey({ level: STORED_FROM_LEVEL, index: block }));
  if (!expected || [...stored.keys()].some((key) => blockOfKey(key) === block)) return;
  const hashes: Buffer[] = [];
  for (let leaf = block * BLOCK; leaf < (block + 1) * BLOCK; leaf += 1) {
    const hash = leaves.get(leaf);
    if (!hash) return;
    hashes.push(hash);
  }
  const { root, nodes } = blockNodes(hashes);
  if (root.equals(expected)) cache.set(block, { nodes, within });
}

const blockOfKey = (key: string) => {
  const [level, index] = key.split('/').map(Number);
  return blockOf({ level: level!, index: index! });
};

/**
 * The lower nodes of kept blocks, once the records still hold every one of their leaves (a record
 * deleted or a day dropped since is then seen as without a cache: the block is rebuilt from what
 * is left, which names the leaf gone). Those that fail are answered undefined.
 */
async function fromKept(
  db: Database,
  nodes: readonly Node[],
  kept: ReadonlyMap<number, KeptBlock>,
): Promise<Map<string, Buffer> | undefined> {
  const ranges = leafRanges([...kept.keys()].map((block) => ({ level: STORED_FROM_LEVEL, index: block })));
  const leafCount = ranges.reduce((sum, [lo, hi]) => sum + hi - lo, 0);
  const within = spanOfAll([...kept.values()].map((block) => block.within)) ?? (await checkTimesOf(db, ranges));
  if ((await leavesHeld(db, ranges, within)) < leafCount && (!within || (await leavesHeld(db, ranges)) < leafCount)) return undefined;
  return new Map(nodes.map((node) => [nodeKey(node), keptNode(blockOf(node), kept.get(blockOf(node))!.nodes, node)]));
}

/** The span covering all of these, or undefined when one is unknown. */
function spanOfAll(spans: ReadonlyArray<CheckTimes | undefined>): CheckTimes | undefined {
  if (spans.some((span) => !span)) return undefined;
  const known = spans as CheckTimes[];
  const at = (date: Date | null) => date?.getTime() ?? NaN;
  const from = known.some((span) => !span.from) ? null : new Date(Math.min(...known.map((span) => at(span.from))));
  const to = known.some((span) => !span.to) ? null : new Date(Math.max(...known.map((span) => at(span.to))));
  return { from, to };
}

/** The lower nodes: from kept blocks where the cache has them, from the records otherwise (the hinted block apart). */
async function lowerNodes(
  db: Database,
  nodes: readonly Node[],
  cache?: BlockCache,
  hint?: BlockHint,
  signed?: SignedSize,
): Promise<Map<string, Buffer>> {
  const kept = new Map<number, KeptBlock>();
  if (cache)
    for (const block of new Set(nodes.map(blockOf))) {
      const found = cache.get(block);
      if (found) kept.set(block, found);
    }
  const keptNodes = nodes.filter((node) => kept.has(blockOf(node)));
  const tailBlock = tailBlockOf(signed);
  // One kept at a smaller size lacks the leaves past it: rebuilt (and kept at this size) instead.
  const found = tailBlock !== undefined && !kept.has(tailBlock) ? cache?.tails?.get(tailBlock) : undefined;
  const tail = found && found.end >= signed!.size ? found : undefined;
  const tailNodes = tail ? nodes.filter((node) => inTail(node, tailBlock!)) : [];
  const rest = nodes.filter((node) => !kept.has(blockOf(node)) && !(tailNodes.length > 0 && inTail(node, tailBlock!)));
  const hinted = rest.filter((node) => blockOf(node) === hint?.block);
  const others = rest.filter((node) => blockOf(node) !== hint?.block);
  const none = new Map<string, Buffer>();
  const [fromKeptTail, fromCache, fromHinted, rebuilt] = await Promise.all([
    tailNodes.length > 0 ? fromTail(db, tailNodes, tail!, signed!, (ranges) => checkTimesOf(db, ranges)) : none,
    keptNodes.length > 0 ? fromKept(db, keptNodes, kept) : none,
    hinted.length > 0 ? rebuildLower(db, hinted, cache, hint!.within, signed) : none,
    others.length > 0 ? rebuildLower(db, others, cache, undefined, signed) : none,
  ]);
  // A kept partial block whose leaves are not all held any more is forgotten and rebuilt from what is left.
  let fromTailNodes = fromKeptTail;
  if (!fromTailNodes) {
    cache!.tails!.set(tailBlock!, undefined);
    fromTailNodes = await rebuildLower(db, tailNodes);
  }
  if (!fromCache) {
    for (const block of kept.keys()) cache!.delete(block);
    return new Map([...rebuilt, ...fromHinted, ...fromTailNodes, ...(await rebuildLower(db, keptNodes))]);
  }
  return new Map([...rebuilt, ...fromHinted, ...fromTailNodes, ...fromCache]);
}

/** Every leaf hash of these records, by index. */
function leavesOf(records: CallRecordRow[]): Map<number, Buffer> {
  const leaves = new Map<number, Buffer>();
  for (const record of records) for (const leaf of leavesOfRecord(presentCallRecord(record))) leaves.set(leaf.index, leaf.hash);
  return leaves;
}

/** The nodes' hashes from the stored lower hashes and these leaf hashes. Throws LeafGone. */
function hashNodes(nodes: readonly Node[], stored: ReadonlyMap<string, Buffer>, leaves: ReadonlyMap<number, Buffer>): Map<string, Buffer> {
  const known = new Map(stored);
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

/**
 * Reads the hashes of complete subtrees: stored from level 8, rebuilt below (the hinted block's
 * records looked for around its time first). Throws LeafGone.
 */
export function treeReader(db: Database, cache?: BlockCache, hint?: BlockHint, signed?: SignedSize): ReadNodes {
  return async (nodes) => {
    const lower = nodes.filter((node) => node.level < STORED_FROM_LEVEL);
    const [upper, rebuilt] = await Promise.all([
      readNodes(
        db,
        nodes.filter((node) => node.level >= STORED_FROM_LEVEL),
      ),
      lower.length > 0 ? lowerNodes(db, lower, cache, hint, signed) : new Map<string, Buffer>(),
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
