import type { AgentPrincipal, HumanPrincipal } from '../kernel/principals';
import type { TrailDeps } from './deps';
import { subtreeUsage } from './repositories/tallies';

/**
 * A grant's budget use now and the size of its subtree, for whoever may read the grant (the same
 * `grants/read` decision as reading it, asked first): what a console shows beside the grant, and
 * what a revocation would take with it.
 */
export async function readGrantUsage(deps: TrailDeps, principal: HumanPrincipal | AgentPrincipal, grantId: string) {
  const grant = await deps.readableGrant(principal, grantId);
  const nowMs = deps.clock.now();
  const { calls, windowMs } = grant.budget;
  const sinceMs = nowMs - windowMs;
  const usage = await subtreeUsage(deps.db, grant.id, sinceMs, nowMs);
  return {
    grantId: grant.id,
    calls,
    windowMs,
    since: new Date(sinceMs).toISOString(),
    used: usage.used,
    remaining: Math.max(0, calls - usage.used),
    descendants: usage.descendants,
    liveDescendants: usage.liveDescendants,
  };
}
