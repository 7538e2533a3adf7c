import type { Database } from '../db/database';
import { leavesHeld, type CheckTimes } from './repositories/leaf-records';
import { BLOCK, readNodes, STORED_FROM_LEVEL } from './repositories/tree';
import { nodeHash } from './tree/leaves';
import { nodeKey, nodesOf, type Node } from './tree/proofs';

/**
 * The tree's last, partial 256-leaf block at a signed size: it has no stored level-8 hash yet, so
 * a proof against that checkpoint (almost every proof against the latest) would rebuild its
 * complete subtrees from up to 255 records each time. A replica keeps them instead, once a
 * rebuild of them gave the root the checkpoint signs (what the tree committed to), and uses them
 * while the records still hold every one of their leaves, as it does a kept complete block.
 */

/** A signed checkpoint a proof is made against: its size and root hash. */
export interface SignedSize {
  size: number;
  root: Buffer;
}

/** The signed size and root a checkpoint note says (origin, size, base64 root, one per line). */
export function signedSizeOf(note: string): SignedSize {
  const [, size, root] = note.split('\n');
  return { size: Number(size), root: Buffer.from(root!, 'base64') };
}

export interface KeptTail {
  /** The signed size whose root its leaves were proven under: it holds the leaves from its block's start to there. */
  end: number;
  /** Every complete subtree below level 8 over those leaves, by nodeKey. */
  nodes: ReadonlyMap<string, Buffer>;
  within?: CheckTimes;
}

/** The partial blocks a replica keeps (src/speedups/proof-blocks.ts), by block; `undefined` forgets one. */
export interface TailCache {
  get(block: number): KeptTail | undefined;
  set(block: number, tail: KeptTail | undefined): void;
}

const span = (level: number) => 2 ** level;

/** The partial block at this signed size, or undefined where the size ends a block. */
export const tailBlockOf = (signed?: SignedSize) => (signed && signed.size % BLOCK !== 0 ? Math.floor(signed.size / BLOCK) : undefined);

/** Whether a node lies in the partial block of this signed size. */
export const inTail = (node: Node, block: number) => Math.floor((node.index * span(node.level)) / BLOCK) === block;

/**
 * Keeps the partial block's complete subtrees when its leaves, from their block's start to the
 * signed size, are all from records and give, with the stored hashes before them, the signed root.
 */
export async function keepTail(
  db: Database,
  tails: TailCache,
  signed: SignedSize,
  read: { stored: ReadonlyMap<string, Buffer>; leaves: ReadonlyMap<number, Buffer>; within: CheckTimes | undefined },
): Promise<void> {
  const block = tailBlockOf(signed)!;
  const start = block * BLOCK;
  if (tails.get(block)?.end === signed.size) return;
  if ([...read.stored.keys()].some((key) => inTail(nodeOfKey(key), block))) return;
  const nodes = new Map<string, Buffer>();
  for (let leaf = start; leaf < signed.size; leaf += 1) {
    const hash = read.leaves.get(leaf);
    if (!hash) return;
    nodes.set(nodeKey({ level: 0, index: leaf }), hash);
  }
  for (let level = 1; level < STORED_FROM_LEVEL; level += 1)
    for (let index = start / span(level); (index + 1) * span(level) <= signed.size; index += 1) {
      const [left, right] = [
        nodes.get(nodeKey({ level: level - 1, index: 2 * index })),
        nodes.get(nodeKey({ level: level - 1, index: 2 * index + 1 })),
      ];
      nodes.set(nodeKey({ level, index }), nodeHash(left!, right!));
    }
  const before = nodesOf(0, start);
  const upper = await readNodes(db, before);
  const hashes = [
    ...before.map((node) => upper.get(nodeKey(node))),
    ...nodesOf(start, signed.size).map((node) => nodes.get(nodeKey(node))),
  ];
  if (hashes.some((hash) => !hash)) return;
  let root = hashes.at(-1)!;
  for (let i = hashes.length - 2; i >= 0; i -= 1) root = nodeHash(hashes[i]!, root);
  if (root.equals(signed.root)) tails.set(block, { end: signed.size, nodes, within: read.within });
}

/**
 * The nodes from a kept partial block, once the records still hold every one of its leaves up to
 * the signed size; undefined otherwise (the block is then rebuilt from what is left, which names
 * the leaf gone).
 */
export async function fromTail(
  db: Database,
  nodes: readonly Node[],
  tail: KeptTail,
  signed: SignedSize,
  checkTimesOf: (ranges: Array<[number, number]>) => Promise<CheckTimes | undefined>,
): Promise<Map<string, Buffer> | undefined> {
  const ranges: Array<[number, number]> = [[tailBlockOf(signed)! * BLOCK, signed.size]];
  const count = signed.size - ranges[0]![0];
  const within = tail.within ?? (await checkTimesOf(ranges));
  if ((await leavesHeld(db, ranges, within)) < count && (!within || (await leavesHeld(db, ranges)) < count)) return undefined;
  const found = new Map<string, Buffer>();
  for (const node of nodes) {
    const hash = tail.nodes.get(nodeKey(node));
    if (!hash) return undefined;
    found.set(nodeKey(node), hash);
  }
  return found;
}

function nodeOfKey(key: string): Node {
  const [level, index] = key.split('/').map(Number);
  return { level: level!, index: index! };
}
