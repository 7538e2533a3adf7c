import { createHash } from 'node:crypto';
import { verifyConsistency, verifyInclusion } from '../../clients/grantctl/src/trail-proofs';
import { leafHash, nodeHash, rootOfFrontier } from '../../src/trail/tree/leaves';
import { consistencyProof, inclusionProof, nodeKey, rootAt, type Node } from '../../src/trail/tree/proofs';

/**
 * The service's proofs over stored subtree hashes, for every tree size up to 40 and every leaf and
 * older size in it, against RFC 9162's own definition of the tree hash (MTH, written out here by
 * its recursion) and checked by grantctl's verifier. A proof that asked for a hash the store does
 * not have (an incomplete subtree) throws.
 */
const leaves = Array.from({ length: 40 }, (_, i) => leafHash(Buffer.from(`leaf ${i}`)));

/** RFC 9162 §2.1.1, as written: the hash of D[lo:hi]. */
function mth(lo: number, hi: number): Buffer {
  if (hi - lo === 1) return leaves[lo]!;
  let k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return nodeHash(mth(lo, lo + k), mth(lo + k, hi));
}

/** The store of a tree of `size` leaves: every complete subtree by (level, index), nothing else. */
function storeOf(size: number) {
  const stored = new Map<string, Buffer>();
  for (let level = 0; 2 ** level <= size; level += 1) {
    for (let index = 0; (index + 1) * 2 ** level <= size; index += 1) {
      stored.set(nodeKey({ level, index }), mth(index * 2 ** level, (index + 1) * 2 ** level));
    }
  }
  return async (nodes: readonly Node[]) => {
    const found = new Map<string, Buffer>();
    for (const node of nodes) {
      const hash = stored.get(nodeKey(node));
      if (hash) found.set(nodeKey(node), hash);
    }
    return found;
  };
}

/** The frontier trail_append keeps: the complete subtrees of the size's binary digits, largest first. */
function frontierOf(size: number): Buffer[] {
  const frontier: Buffer[] = [];
  let at = 0;
  for (let level = 31; level >= 0; level -= 1) {
    if (size & (2 ** level)) {
      frontier.push(mth(at, at + 2 ** level));
      at += 2 ** level;
    }
  }
  return frontier;
}

describe('the trail tree’s proofs', () => {
  it('hash the empty tree as SHA-256 of nothing', () => {
    expect(rootOfFrontier([])).toEqual(createHash('sha256').digest());
  });

  it('prove every leaf and every older size of every tree up to 40 leaves', async () => {
    for (let size = 1; size <= 40; size += 1) {
      const read = storeOf(size);
      const root = mth(0, size);
      expect(await rootAt(size, read)).toEqual(root);
      expect(rootOfFrontier(frontierOf(size))).toEqual(root);
      for (let leaf = 0; leaf < size; leaf += 1) {
        const proof = await inclusionProof(leaf, size, read);
        expect(verifyInclusion(leaf, size, leaves[leaf]!, proof, root)).toBe(true);
        // Another leaf's hash, or the right hash at another index, is refused.
        expect(verifyInclusion(leaf, size, leaves[(leaf + 1) % 40]!, proof, root)).toBe(false);
        if (size > 1) expect(verifyInclusion((leaf + 1) % size, size, leaves[leaf]!, proof, root)).toBe(false);
      }
      for (let older = 1; older < size; older += 1) {
        const proof = await consistencyProof(older, size, read);
        const first = { origin: 'o', size: older, root: mth(0, older) };
        const second = { origin: 'o', size, root };
        expect(verifyConsistency(first, second, proof)).toBe(true);
        expect(verifyConsistency({ ...first, root: leaves[39]! }, second, proof)).toBe(false);
        expect(verifyConsistency(second, first, proof)).toBe(false);
      }
    }
  });

  it('refuse sizes a proof cannot have', async () => {
    const read = storeOf(8);
    await expect(inclusionProof(8, 8, read)).rejects.toThrow(RangeError);
    await expect(consistencyProof(0, 8, read)).rejects.toThrow(RangeError);
    await expect(consistencyProof(9, 8, read)).rejects.toThrow(RangeError);
  });
});
