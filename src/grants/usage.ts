import type { GrantsDeps } from './deps';
import { readableGrant, type GrantCaller } from './access';
import { subtreeUsage } from './repositories/call-record-tallies';

/**
 * A grant's budget use now and the size of its subtree, for whoever may read the grant (the same
 * `grants/read` decision as reading it): what a console shows beside the grant, and what a
 * revocation would take with it.
 */
export async function readGrantUsage(deps: GrantsDeps, principal: GrantCaller, grantId: string) {
  const { facts } = await readableGrant(deps, principal, grantId);
  const grant = facts.grant;
  const nowMs = deps.clock.now();
  const windowMs = Number(grant.budget_window_ms);
  const sinceMs = nowMs - windowMs;
  const usage = await subtreeUsage(deps.db, grant.id, sinceMs, nowMs);
  return {
    grantId: grant.id,
    calls: grant.budget_calls,
    windowMs,
    since: new Date(sinceMs).toISOString(),
    used: usage.used,
    remaining: Math.max(0, grant.budget_calls - usage.used),
    descendants: usage.descendants,
    liveDescendants: usage.liveDescendants,
  };
}
