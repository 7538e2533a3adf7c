import type { Clock } from '../kernel/clock';
import type { Principal } from '../kernel/principals';

export type TallyDecision = 'allowed' | 'denied' | 'awaiting_approval';

/** A live root grant the overview may show beside its budget use. */
export interface TreeRoot {
  id: string;
  targetKind: string;
  targetId: string;
  tools: string[];
  budgetCalls: number;
  budgetWindowMs: number;
  live: boolean;
}

/**
 * What the overview reads, as ports the composition fills from the domains that own each table:
 * the pod's access decision (pods), the trail's tallies and a tree's budget use (the trail), the
 * roots (grants) and what waits for approval (approvals). It owns no table of its own.
 */
export interface OverviewDeps {
  clock: Clock;
  /** `pods/access` with `overview.read`: 404 for a pod the caller is not a member of. */
  authorize(principal: Principal, podId: string): Promise<{ id: string; name: string }>;
  tallies: {
    hourly(podId: string, from: Date, to: Date): Promise<Array<{ hour: Date; decision: TallyDecision; calls: number }>>;
    denials(podId: string, from: Date, to: Date): Promise<Array<{ reason: string; orgRule: string; calls: number }>>;
    busiestTrees(podId: string, since: Date, limit: number): Promise<Array<{ rootId: string; calls: number }>>;
  };
  roots(ids: readonly string[], nowMs: number): Promise<TreeRoot[]>;
  /** Allowed calls of the tree under `rootId` since `sinceMs`: its budget use (counted as the windows are rebuilt). */
  treeUse(rootId: string, sinceMs: number, nowMs: number): Promise<number>;
  pendingApprovals(podId: string, now: Date): Promise<number>;
}
