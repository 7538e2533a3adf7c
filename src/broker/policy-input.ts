import type { Chain } from './chain';
import type { CallPrincipal, MutableFacts } from './tree-facts';

/**
 * The input of broker/check/decision (policies/broker/check.rego). Facts only; no rule is
 * decided here. The call's arguments never enter the input (nor the decision log).
 */
export function checkInput(
  request: { brokerId: string; tool: string; principal: CallPrincipal; now: number },
  chain: Chain,
  facts: MutableFacts,
) {
  const revoked = new Set(facts.revokedIds);
  return {
    now_ms: request.now,
    broker_id: request.brokerId,
    tool: request.tool,
    principal: request.principal,
    chain: chain.map((grant) => ({ ...grant, revoked: revoked.has(grant.id) })),
    connection: facts.connection,
    // Says only whether the principal is a current member of each pod: all that the effective
    // audience needs to answer for this principal.
    members: Object.fromEntries(facts.memberOf.map((podId) => [podId, [request.principal.id]])),
    ...(request.principal.kind === 'agent' && facts.desiredState ? { runtime: { desired_state: facts.desiredState } } : {}),
  };
}
