import type { Database } from './db/database';
import { podBusiestTrees, podDenials, podHourlyTallies, subtreeUsage } from './trail/repositories/tallies';
import { findGrants } from './grants/repository';
import { pendingApprovalsOfPod } from './approvals/repository';
import type { Clock } from './kernel/clock';
import type { OverviewDeps } from './overview/deps';
import type { PolicyEngine } from './policy/engine';
import { authorizePodAction } from './pods/access';
import { isAdminOfAnyPod } from './pods/repository';
import type { PlaygroundDeps } from './playground/deps';

/** The ports of the console's own reads, filled from the domains that own each table (the wiring's job). */

/** The overview: a pod's tallies, its trees' budgets, what waits for approval. */
export function overviewPorts(db: Database, policy: PolicyEngine, clock: Clock): OverviewDeps {
  return {
    clock,
    authorize: (principal, podId) => authorizePodAction({ db, policy }, principal, podId, 'overview.read'),
    tallies: {
      hourly: (podId, from, to) => podHourlyTallies(db, podId, from, to),
      denials: (podId, from, to) => podDenials(db, podId, from, to),
      busiestTrees: (podId, since, limit) => podBusiestTrees(db, podId, since, limit),
    },
    roots: async (ids, nowMs) =>
      (await findGrants(db, ids)).map((row) => ({
        id: row.id,
        targetKind: row.target_kind,
        targetId: row.target_id,
        tools: row.tools,
        budgetCalls: row.budget_calls,
        budgetWindowMs: Number(row.budget_window_ms),
        live: row.revoked_at === null && row.expires_at.getTime() > nowMs,
      })),
    treeUse: async (rootId, sinceMs, nowMs) => (await subtreeUsage(db, rootId, sinceMs, nowMs)).used,
    pendingApprovals: (podId, now) => pendingApprovalsOfPod(db, podId, now),
  };
}

/** The policy playground: the serving policy, its recent checks, and who is a security admin. */
export function playgroundPorts(
  db: Database,
  policy: PolicyEngine,
  settings: { securityAdmins: readonly string[]; maxBundleBytes: number },
): PlaygroundDeps {
  return {
    policy,
    recentChecks: (limit) => policy.decisionLog.recent(limit),
    securityAdmins: settings.securityAdmins,
    isPodAdmin: (userId) => isAdminOfAnyPod(db, userId),
    maxBundleBytes: settings.maxBundleBytes,
  };
}
