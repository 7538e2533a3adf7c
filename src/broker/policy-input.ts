import type { Chain } from './chain';
import type { CallSubject } from './credentials';
import type { MutableFacts } from './tree-facts';

/**
 * The input of broker/check/decision (policies/broker/check.rego). Facts only; no rule is
 * decided here. The call's arguments never enter the input (nor the decision log).
 */
export function checkInput(
  request: { brokerId: string; tool: string; subject: CallSubject; trustAssertedPrincipal: boolean; now: number },
  chain: Chain,
  facts: MutableFacts,
) {
  const revoked = new Set(facts.revokedIds);
  const { principal, source } = request.subject;
  return {
    now_ms: request.now,
    broker_id: request.brokerId,
    tool: request.tool,
    principal: principal ?? undefined,
    principal_source: source,
    trust_asserted_principal: request.trustAssertedPrincipal,
    chain: chain.map((grant) => ({ ...grant, revoked: revoked.has(grant.id) })),
    connection: facts.connection,
    // Says only whether the principal is a current member of each pod: all that the effective
    // audience needs to answer for this principal.
    members: principal ? Object.fromEntries(facts.memberOf.map((podId) => [podId, [principal.id]])) : {},
    ...(principal?.kind === 'agent' && facts.desiredState ? { runtime: { desired_state: facts.desiredState } } : {}),
  };
}
