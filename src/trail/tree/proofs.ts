import { nodeHash } from './leaves';

/**
 * Inclusion and consistency proofs (RFC 9162 §2.1.3 and §2.1.4) over a tree whose complete
 * subtrees are stored by (level, index): the proof is planned first as ranges of leaves, each
 * range read as the few complete subtrees it splits into, all of them in one read.
 */
export interface Node {
  level: number;
  index: number;
}

/** Reads the hashes of complete subtrees, by node (one round trip for a whole proof). */
export type ReadNodes = (nodes: readonly Node[]) => Promise<Map<string, Buffer>>;

export const nodeKey = (node: Node) => `${node.level}/${node.index}`;

/** The largest power of two smaller than n (n > 1). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The complete subtrees leaves [lo, hi) split into, largest first (lo is aligned for every range a proof asks for). */
export function nodesOf(lo: number, hi: number): Node[] {
  const nodes: Node[] = [];
  let at = lo;
  while (at < hi) {
    let size = 1;
    while (at % (size * 2) === 0 && at + size * 2 <= hi) size *= 2;
    nodes.push({ level: Math.log2(size), index: at / size });
    at += size;
  }
  return nodes;
}

type Range = [number, number];

/** RFC 9162 PATH(m, D[lo:hi]): the ranges whose hashes prove leaf m, bottom first. */
function inclusionRanges(m: number, lo: number, hi: number): Range[] {
  if (hi - lo <= 1) return [];
  const k = split(hi - lo);
  return m < lo + k ? [...inclusionRanges(m, lo, lo + k), [lo + k, hi]] : [...inclusionRanges(m, lo + k, hi), [lo, lo + k]];
}

/** RFC 9162 SUBPROOF(m, D[lo:hi], b). */
function consistencyRanges(m: number, lo: number, hi: number, whole: boolean): Range[] {
  if (m === hi - lo) return whole ? [] : [[lo, hi]];
  const k = split(hi - lo);
  return m <= k
    ? [...consistencyRanges(m, lo, lo + k, whole), [lo + k, hi]]
    : [...consistencyRanges(m - k, lo + k, hi, false), [lo, lo + k]];
}

async function hashesOf(ranges: Range[], read: ReadNodes): Promise<Buffer[]> {
  const planned = ranges.map(([lo, hi]) => nodesOf(lo, hi));
  const stored = await read(planned.flat());
  return planned.map((nodes) => {
    const hashes = nodes.map((node) => {
      const hash = stored.get(nodeKey(node));
      if (!hash) throw new Error(`the tree has no hash at ${nodeKey(node)}`);
      return hash;
    });
    let hash = hashes[hashes.length - 1]!;
    for (let i = hashes.length - 2; i >= 0; i -= 1) hash = nodeHash(hashes[i]!, hash);
    return hash;
  });
}

export async function inclusionProof(leafIndex: number, treeSize: number, read: ReadNodes): Promise<Buffer[]> {
  if (leafIndex < 0 || leafIndex >= treeSize) throw new RangeError('the leaf is not in a tree of that size');
  return hashesOf(inclusionRanges(leafIndex, 0, treeSize), read);
}

export async function consistencyProof(from: number, to: number, read: ReadNodes): Promise<Buffer[]> {
  if (from < 1 || from > to) throw new RangeError('no consistency proof between those sizes');
  return hashesOf(consistencyRanges(from, 0, to, true), read);
}

/** The root of the tree of the first `size` leaves. */
export async function rootAt(size: number, read: ReadNodes): Promise<Buffer> {
  const [root] = await hashesOf([[0, size]], read);
  return root!;
}

export type { Range };

/**
 * What rebuilds the root of a tree of `size` leaves from some of its leaves (an archived day's):
 * the ranges of RFC 9162's split of the tree that hold none of those leaves while the range they
 * were split from holds some. A day's span costs O(log n) of them per edge. `leaves` sorted.
 */
export function borderRanges(size: number, leaves: readonly number[]): Range[] {
  const borders: Range[] = [];
  const holdsLeaf = (lo: number, hi: number) => {
    let [a, b] = [0, leaves.length];
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (leaves[mid]! < lo) a = mid + 1;
      else b = mid;
    }
    return a < leaves.length && leaves[a]! < hi;
  };
  const walk = (lo: number, hi: number): void => {
    if (!holdsLeaf(lo, hi)) {
      borders.push([lo, hi]);
      return;
    }
    if (hi - lo === 1) return;
    const k = split(hi - lo);
    walk(lo, lo + k);
    walk(lo + k, hi);
  };
  if (size > 0) walk(0, size);
  return borders;
}

/** The hashes of these ranges of leaves (each a range of RFC 9162's split of some tree). */
export function rangeHashes(ranges: Range[], read: ReadNodes): Promise<Buffer[]> {
  return hashesOf(ranges, read);
}
