import type { Database } from '../db/database';
import { presentCallRecord } from './presenters';
import type { CallRecordRow } from './repositories/call-record-rows';
import { callRecordsOfLeaves, type CheckTimes } from './repositories/leaf-records';
import { readBlockHashes, BLOCK, STORED_FROM_LEVEL } from './repositories/tree';
import { blockNodes } from './tree/block-nodes';
import { leavesOfRecord, nodeHash } from './tree/leaves';
import { nodeKey, type Node } from './tree/proofs';
import { blockOf, checkTimesOf, leafRanges, type BlockCache } from './tree-blocks';
import { keepTail, tailBlockOf, type SignedSize } from './tree-tail';

/**
 * The tree's nodes below level 8 rebuilt from the records (tree-store.ts tells the store's story):
 * each leaf from its record, each node from the leaves under it and the lower hashes a dropped day
 * left, and a complete block kept once it hashes to the level-8 hash the tree stored.
 */

/** A node the tree can no longer rebuild: a leaf under it has no record and no stored hash over it. */
export class LeafGone extends Error {
  constructor(readonly leafIndex: number) {
    super(`leaf ${leafIndex} has no record and no stored hash covers it`);
  }
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
export async function rebuildLower(
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
