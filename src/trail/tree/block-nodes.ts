import { BLOCK } from '../repositories/tree';
import { nodeHash } from './leaves';
import type { Node } from './proofs';

/**
 * A complete 256-leaf block of the tree as a replica keeps it (trail/tree-blocks.ts, KeptBlock):
 * every node below its level-8 root, packed level by level, so that a proof reads its nodes
 * instead of hashing them again.
 */

/** How many node hashes a kept block holds: 256 leaves, 128 of level 1, ..., 2 of level 7. */
export const KEPT_NODES = 2 * BLOCK - 2;

/** Where the nodes of a level (below 8) start among a kept block's: after the levels below it. */
const levelStart = (level: number) => 2 * BLOCK - (2 * BLOCK) / 2 ** level;

/** A block's level-8 hash from its 256 leaf hashes, and every node below it packed as KeptBlock keeps them. */
export function blockNodes(leafHashes: readonly Buffer[]): { root: Buffer; nodes: Buffer } {
  const all: Buffer[] = [...leafHashes];
  let level: Buffer[] = [...leafHashes];
  while (level.length > 2) {
    level = Array.from({ length: level.length / 2 }, (_, i) => nodeHash(level[2 * i]!, level[2 * i + 1]!));
    all.push(...level);
  }
  return { root: nodeHash(level[0]!, level[1]!), nodes: Buffer.concat(all) };
}

/** A node's hash (level below 8) out of its kept block's packed nodes. */
export function keptNode(block: number, nodes: Buffer, node: Node): Buffer {
  const at = levelStart(node.level) + node.index - block * (BLOCK >> node.level);
  return nodes.subarray(at * 32, at * 32 + 32);
}
