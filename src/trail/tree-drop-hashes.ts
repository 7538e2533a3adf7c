import type { Database } from '../db/database';
import { leavesOfDayInPartBlocks } from './repositories/days';
import { BLOCK, saveNodes, STORED_FROM_LEVEL, treeHead } from './repositories/tree';
import { nodeKey, type Node } from './tree/proofs';
import { span } from './tree-blocks';
import { treeReader } from './tree-store';

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
