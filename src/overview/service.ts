import type { Principal } from '../kernel/principals';
import type { OverviewDeps, TallyDecision, TreeRoot } from './deps';

const HOUR_MS = 3_600_000;
const HOURS = { '24h': 24, '7d': 168 } as const;
/** Trees whose exact budget use is counted: the busiest by the tallies, then the nearest by count. */
const CANDIDATE_TREES = 10;
const NEAREST_SHOWN = 5;

export type OverviewRange = keyof typeof HOURS;

const KEYS: Record<TallyDecision, 'allowed' | 'denied' | 'awaitingApproval'> = {
  allowed: 'allowed',
  denied: 'denied',
  awaiting_approval: 'awaitingApproval',
};

const mostFirst = <T extends { calls: number }>(items: T[], name: (item: T) => string) =>
  items.sort((a, b) => b.calls - a.calls || name(a).localeCompare(name(b)));

/**
 * A pod's checks over the range, from the trail's tallies (a few hundred rows, whatever the number
 * of records), with the trees nearest their budget and what waits for approval. Members only.
 */
export async function readOverview(deps: OverviewDeps, principal: Principal, podId: string, range: OverviewRange) {
  const pod = await deps.authorize(principal, podId);
  const nowMs = deps.clock.now();
  const to = new Date(nowMs);
  const from = new Date(nowMs - (nowMs % HOUR_MS) - (HOURS[range] - 1) * HOUR_MS);
  const [hourly, denials, pendingApprovals, nearestBudget] = await Promise.all([
    deps.tallies.hourly(podId, from, to),
    deps.tallies.denials(podId, from, to),
    deps.pendingApprovals(podId, to),
    nearestTrees(deps, podId, nowMs),
  ]);

  const hours = Array.from({ length: HOURS[range] }, (_, i) => ({
    hour: new Date(from.getTime() + i * HOUR_MS).toISOString(),
    allowed: 0,
    denied: 0,
    awaitingApproval: 0,
  }));
  const totals = { allowed: 0, denied: 0, awaitingApproval: 0 };
  for (const row of hourly) {
    const bucket = hours[Math.floor((row.hour.getTime() - from.getTime()) / HOUR_MS)];
    if (!bucket) continue;
    bucket[KEYS[row.decision]] += row.calls;
    totals[KEYS[row.decision]] += row.calls;
  }

  const byReason = new Map<string, number>();
  const byRule = new Map<string, number>();
  for (const row of denials) {
    byReason.set(row.reason, (byReason.get(row.reason) ?? 0) + row.calls);
    if (row.orgRule) byRule.set(row.orgRule, (byRule.get(row.orgRule) ?? 0) + row.calls);
  }
  return {
    pod: { id: pod.id, name: pod.name },
    range,
    from: from.toISOString(),
    to: to.toISOString(),
    hours,
    totals,
    denialsByReason: mostFirst(
      [...byReason].map(([reason, calls]) => ({ reason, calls })),
      (item) => item.reason,
    ),
    denialsByOrgRule: mostFirst(
      [...byRule].map(([rule, calls]) => ({ rule, calls })),
      (item) => item.rule,
    ),
    pendingApprovals,
    nearestBudget,
  };
}

/**
 * The live trees nearest their budget. The tallies name the busiest trees of the last day and
 * estimate each one's share of its budget (its calls scaled to its window); the exact use now is
 * counted for the likeliest few only, as the budget windows are rebuilt from the trail.
 */
async function nearestTrees(deps: OverviewDeps, podId: string, nowMs: number) {
  const busiest = await deps.tallies.busiestTrees(podId, new Date(nowMs - 24 * HOUR_MS), CANDIDATE_TREES * 5);
  if (busiest.length === 0) return [];
  const roots = new Map(
    (
      await deps.roots(
        busiest.map((tree) => tree.rootId),
        nowMs,
      )
    ).map((root) => [root.id, root]),
  );
  const estimate = (tree: { rootId: string; calls: number }, root: TreeRoot) =>
    (tree.calls * Math.min(1, root.budgetWindowMs / (24 * HOUR_MS))) / Math.max(1, root.budgetCalls);
  const candidates = busiest
    .flatMap((tree) => {
      const root = roots.get(tree.rootId);
      return root?.live ? [{ root, estimate: estimate(tree, root) }] : [];
    })
    .sort((a, b) => b.estimate - a.estimate)
    .slice(0, CANDIDATE_TREES);
  const counted = await Promise.all(
    candidates.map(async ({ root }) => {
      const used = await deps.treeUse(root.id, nowMs - root.budgetWindowMs, nowMs);
      return {
        grantId: root.id,
        target: { kind: root.targetKind, id: root.targetId },
        tools: root.tools,
        calls: root.budgetCalls,
        windowMs: root.budgetWindowMs,
        used,
        remaining: Math.max(0, root.budgetCalls - used),
      };
    }),
  );
  return counted
    .filter((tree) => tree.used > 0)
    .sort((a, b) => b.used / b.calls - a.used / a.calls || a.grantId.localeCompare(b.grantId))
    .slice(0, NEAREST_SHOWN);
}
