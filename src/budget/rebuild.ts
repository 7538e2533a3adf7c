import { randomUUID } from 'node:crypto';
import type { SlidingWindowBudget } from './sliding-window';

/**
 * A call counts in a rebuilt window from its `requested_at` plus this margin: the replica's clock
 * that stamped it and Redis's clock that counted it may differ a little, and counting a call
 * later than it was made can only admit fewer calls, never more.
 */
export const REBUILD_CLOCK_MARGIN_MS = 1000;

/** A grant of the tree with its budget: one level of the tree's windows. */
export interface TreeLevel {
  id: string;
  parentId: string | null;
  calls: number;
  windowMs: number;
}

/**
 * What a rebuild reads of the grants and the call trail (a port: budget/ knows no domain;
 * composition.ts fills it from grants/repository.ts).
 */
export interface TreeWindowsSource {
  /** The grants of the tree whose root this is, with their budgets. */
  levelsOf(rootId: string): Promise<TreeLevel[]>;
  /**
   * The allowed calls that count in each level's window now (a call counts at its grant and every
   * ancestor), each at its `requested_at` plus `marginMs`: the newest `calls` one by one for an
   * exact window (`bucketMs` 0), counted per bucket otherwise.
   */
  callsIn(
    levels: ReadonlyArray<TreeLevel & { bucketMs: number }>,
    marginMs: number,
  ): Promise<Array<{ levelId: string; atMs: number; n: number }>>;
  /**
   * The tree's allowed calls per tool since `sinceMs` (at their `requested_at`), and whether it
   * made any since `labelsSinceMs`: what its session is rebuilt from.
   */
  sessionOf(
    grantIds: readonly string[],
    sinceMs: number,
    labelsSinceMs: number,
  ): Promise<{ calls: Array<{ tool: string; atMs: number; n: number }>; anySince: boolean }>;
}

/**
 * Rebuilds every window of a grant tree from the call trail, after Redis lost the tree's keys (a
 * restart without persistence, an eviction): a used-up budget stays used up. Answers the tree's
 * version, the one it stored or the one another replica stored first. Concurrent checks of a tree
 * whose keys are gone (a new tree's first checks, every tree after a Redis restart) may share one
 * rebuild (src/speedups/single-flight.ts); each one alone is correct too.
 */
export async function rebuildTreeWindows(source: TreeWindowsSource, budget: SlidingWindowBudget, rootId: string): Promise<string> {
  const levels = (await source.levelsOf(rootId)).map((level) => ({ ...level, bucketMs: budget.bucketMsOf(level) }));
  const counted = new Map<string, Array<[number, number]>>(levels.map((level) => [level.id, []]));
  for (const call of await source.callsIn(levels, REBUILD_CLOCK_MARGIN_MS)) counted.get(call.levelId)!.push([call.atMs, call.n]);
  // Labels cannot be rebuilt (the trail does not keep them): a tree that made allowed calls within
  // a label's life is marked `labels_lost`, which the shipped rules read as the worst case.
  const root = levels.find((level) => level.parentId === null) ?? levels[0]!;
  const now = Date.now();
  const session = await source.sessionOf(
    levels.map((level) => level.id),
    now - root.windowMs - REBUILD_CLOCK_MARGIN_MS,
    now - budget.sessionShape.labelTtlMs - REBUILD_CLOCK_MARGIN_MS,
  );
  return budget.restore(
    rootId,
    levels.map((level) => ({ grantId: level.id, calls: level.calls, windowMs: level.windowMs, counted: counted.get(level.id)! })),
    randomUUID(),
    { rootWindowMs: root.windowMs, calls: session.calls, labelsMayBeLost: session.anySince },
  );
}
