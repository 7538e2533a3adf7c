import type { Database } from '../db/database';
import { leavesHeld, type CheckTimes } from './repositories/leaf-records';
import { readNodes, STORED_FROM_LEVEL } from './repositories/tree';
import { keptNode } from './tree/block-nodes';
import { nodeKey, type Node, type ReadNodes } from './tree/proofs';
import { blockOf, checkTimesOf, leafRanges, type BlockCache, type BlockHint, type KeptBlock } from './tree-blocks';
import { rebuildLower } from './tree-rebuild';
import { fromTail, inTail, tailBlockOf, type SignedSize } from './tree-tail';

export { signedSizeOf, type KeptTail, type SignedSize, type TailCache } from './tree-tail';
export { checkTimesAround, checkTimesOf, KEPT_NODES, type BlockCache, type BlockHint, type KeptBlock } from './tree-blocks';
export { LeafGone } from './tree-rebuild';

/**
 * The trail's tree as kept (migrations/20261126203000): hashes of level 8 and up are stored; a
 * node below is rebuilt from the leaves of its 256-leaf block, each leaf from its record (the
 * record alone rebuilds it, contract §22), or read where a dropped day left it. A proof reads
 * O(log n) stored hashes and at most a block's records (two for a consistency proof's edges), or,
 * for a complete block a replica keeps (BlockCache), only how many of its leaves still have a record.
 *
 * Here the reader of the tree's nodes: stored from level 8, kept blocks where a replica has them,
 * rebuilt from the records otherwise (tree-rebuild.ts); the blocks' geometry and cache are
 * tree-blocks.ts's, the partial last block's tree-tail.ts's, the hashes kept before a day is
 * dropped tree-drop-hashes.ts's.
 */

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
