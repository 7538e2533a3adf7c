import { LruCache } from '../kernel/lru';
import { KEPT_NODES, type BlockCache, type KeptBlock, type KeptTail } from '../trail/tree-store';

/**
 * Speed-up: the node hashes of complete 256-leaf blocks of the trail's tree (its leaves and every
 * node up to level 7), kept per replica, so that a proof through a block proven before counts
 * which of its leaves still have a record (one number, not the records) and reads its nodes,
 * instead of reading the records, naming their grants and hashing 256 leaves and 255 nodes again.
 *
 * Trades: memory, bounded by bytes (16 KiB a block and the two times its records were checked
 * between: BYTES / 16 KiB blocks, the least recently used forgotten first) for that work. Kept is
 * only what the tree committed to: a block complete, every leaf from a record, whose leaves hash
 * to the level-8 hash the tree stored for it (what the signed checkpoints sign). A block taken
 * from here is used only while the records still hold every one of its leaves, so a record
 * deleted or a day dropped since is seen as without it (the proof says `not_provable`, naming the
 * leaf). A record edited since no longer verifies either way (its leaf is rebuilt from what it
 * says now); the other records of its block keep true proofs from here where, rebuilt from the
 * records, theirs would fail with it. A block holding an edited record is never kept. An
 * inclusion proof is only ever made for a record read first.
 *
 * Likewise the tree's last, partial block at a signed size (trail/tree-tail.ts): its complete
 * subtrees, kept once they and the stored hashes before them gave the root the checkpoint signs,
 * used while the records still hold every one of its leaves up to that size. A few are kept (the
 * latest checkpoints'), 16 KiB of hashes at most each.
 *
 * Off (SPEEDUPS=off): every proof rebuilds its blocks from the records.
 */
const BLOCK_BYTES = KEPT_NODES * 32;
export const PROOF_BLOCK_BYTES = 32 * 1024 * 1024;
const TAILS = 8;

export function proofBlocks(bytes = PROOF_BLOCK_BYTES): BlockCache {
  const blocks = new LruCache<number, KeptBlock>(Math.max(1, Math.floor(bytes / BLOCK_BYTES)));
  const tails = new LruCache<number, KeptTail>(TAILS);
  return {
    get: (block) => blocks.get(block),
    // A copy: the packed hashes must not pin a larger buffer they were cut from.
    set: (block, kept) => blocks.set(block, { nodes: Buffer.from(kept.nodes), within: kept.within }),
    delete: (block) => blocks.delete(block),
    tails: {
      get: (block) => tails.get(block),
      set: (block, tail) => (tail ? tails.set(block, tail) : tails.delete(block)),
    },
  };
}
