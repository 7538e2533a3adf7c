import { DependencyUnavailableError } from '../../kernel/dependency';
import { fingerprintBytes, type MintedCredential } from '../../github-apps/installation-tokens';
import { ApiError } from '../../kernel/errors';
import type { BrokerDeps, NewCallRecord, TalliedCheck } from '../deps';
import { brokerDecisions } from '../metrics';
import { budgetLevels } from './charge';
import { decisions, type DecisionInput } from '../../kernel/decisions/catalogue';
import type { CheckAnswer, Resolved, Settled, Verdict } from './stages';

export type SettleDeps = Pick<BrokerDeps, 'approvals' | 'budget' | 'trail' | 'tallies' | 'log' | 'approvalTtlMs' | 'policy'>;

/**
 * The last stage: the answer, and the call record it waits for. No record, no answer: the broker
 * must not run a call the trail does not show. A plain call's record shares a group commit with
 * its neighbours'; a call that uses or asks for an approval has the approvals write its record with
 * the approval, so neither is left without the other. The one give-back of the check is
 * here: a unit taken for a call whose record could not be written.
 */
export async function settle(
  deps: SettleDeps,
  call: Resolved,
  verdict: Verdict,
  charged: Settled,
  credential?: MintedCredential,
): Promise<CheckAnswer> {
  let answer = answerOf(deps, call, verdict, charged);
  // Only an allowed call carries the token; its record keeps the fingerprint, never the token.
  const handed = answer.decision === 'allow' ? credential : undefined;
  if (handed) answer = { ...answer, credential: handed };
  // recordOf's object is this check's own: the credential's members join it (no copy per check).
  const record = recordOf(call, verdict, answer);
  if (handed)
    Object.assign(record, { credential_fingerprint: fingerprintBytes(handed.token), credential_expires_at: new Date(handed.expiresAt) });
  let leafIndex: number | undefined;
  try {
    if (charged.kind === 'taken' && charged.claim) {
      leafIndex = await charged.claim.commitWith({ ...record, approval_id: charged.claim.approvalId });
    } else if (answer.reason === 'approval_required') {
      const asked = await deps.approvals.ask(approvalRequestOf(deps, call, verdict), (approval) => ({
        ...record,
        outcome: 'awaiting_approval',
        approval_id: approval.id,
      }));
      leafIndex = asked.receipt;
      const approval = { id: asked.id, expiresAt: asked.expiresAt, consoleUrl: asked.consoleUrl };
      answer = { ...answer, decision: 'approval_required', approvalId: asked.id, approval };
    } else {
      leafIndex = await deps.trail.write(record);
    }
  } catch (error) {
    if (charged.kind === 'taken') await charged.claim?.release();
    deps.log.error({ err: { message: (error as Error).message }, callId: call.callId }, 'call record not written');
    // Every consumed unit has its record: the unit of a call that has none is given back.
    if (charged.kind === 'taken') {
      await deps.budget.refund(call.chain[0]!.root_id, budgetLevels(call.chain), charged.atMs).catch(() => undefined);
    }
    throw new DependencyUnavailableError('the call trail could not be written');
  }
  brokerDecisions.labels(answer.decision, answer.reason).inc();
  deps.tallies.count(talliedOf(call, answer));
  // Object.assign, not a spread followed by a member (V8's slow path): every recorded check has a receipt.
  return leafIndex === undefined ? answer : Object.assign({}, answer, { receipt: { leafIndex } });
}

/** The recorded check as the trail's tallies count it: an org rule's denial by its rule too. */
function talliedOf(call: Resolved, answer: Pick<CheckAnswer, 'decision' | 'reason' | 'explanation'>): TalliedCheck {
  const grant = call.chain[0]!;
  const rule = answer.explanation?.rule ?? '';
  return {
    podId: grant.target.pod_id,
    rootId: grant.root_id,
    atMs: call.requestedAt.getTime(),
    decision: answer.decision === 'allow' ? 'allowed' : answer.decision === 'deny' ? 'denied' : 'awaiting_approval',
    reason: answer.decision === 'deny' ? answer.reason : '',
    // The core's own rules are `broker.check.<reason>` and `broker.charge.<reason>`; anything else is an org rule's id.
    orgRule: answer.decision === 'deny' && rule !== '' && !rule.startsWith('broker.') ? rule : '',
  };
}

/**
 * An allowed call whose credential could not be minted: recorded as denied
 * (`credential_unavailable`), with no unit taken and no approval spent (the charge never ran), and
 * answered 503. The broker must not make the call, so nothing counts against the budget, and a
 * retry once GitHub answers finds the same approval still usable.
 */
export async function refuseWithoutCredential(deps: SettleDeps, call: Resolved, verdict: Verdict, detail: string): Promise<never> {
  const record: NewCallRecord = {
    ...recordOf(call, verdict, {
      decision: 'deny',
      callId: call.callId,
      reason: 'credential_unavailable',
      budget: { remaining: 0, resetMs: 0 },
    }),
  };
  try {
    await deps.trail.write(record);
  } catch (error) {
    deps.log.error({ err: { message: (error as Error).message }, callId: call.callId }, 'call record not written');
    throw new DependencyUnavailableError('the call trail could not be written');
  }
  brokerDecisions.labels('deny', 'credential_unavailable').inc();
  deps.tallies.count(talliedOf(call, { decision: 'deny', reason: 'credential_unavailable' }));
  throw new ApiError('credential_unavailable', detail);
}

function answerOf(deps: SettleDeps, call: Resolved, verdict: Verdict, charged: Settled): CheckAnswer {
  const { callId } = call;
  const budget = { remaining: 'remaining' in charged ? charged.remaining : 0, resetMs: charged.resetMs };
  const explained = (explanation: CheckAnswer['explanation']) => (explanation ? { explanation } : {});
  switch (charged.kind) {
    case 'taken':
      return { decision: 'allow', callId, reason: 'allowed', budget };
    case 'exhausted': {
      const explanation = chargeRefusal(deps, call, 'budget_exhausted', charged.fullLevels);
      return { decision: 'deny', callId, reason: 'budget_exhausted', retryAfterMs: charged.retryAfterMs, budget, explanation };
    }
    case 'approval_used':
      return { decision: 'deny', callId, reason: 'approval_used', budget, explanation: chargeRefusal(deps, call, 'approval_used') };
    case 'label_limit': {
      const explanation = chargeRefusal(deps, call, 'session_label_limit');
      return { decision: 'deny', callId, reason: 'session_label_limit', budget, explanation };
    }
    case 'probed':
      if (verdict.kind === 'ask')
        return { decision: 'deny', callId, reason: 'approval_required', budget, ...explained(verdict.explanation) };
      if (verdict.kind === 'deny') {
        const message = verdict.message ? { message: verdict.message } : {};
        return { decision: 'deny', callId, reason: verdict.reason, ...message, budget, ...explained(verdict.explanation) };
      }
      throw new Error('an allowed call was only probed');
  }
}

/** A refusal of the budget script, explained by the policy (broker/charge) like any other. */
function chargeRefusal(deps: SettleDeps, call: Resolved, reason: ChargeRefusal, fullLevels: number[] = []) {
  const chain = call.chain.map((grant) => ({ id: grant.id }));
  return deps.policy.evaluate(decisions.brokerCharge, { reason, chain, full_levels: fullLevels }).explanation;
}

type ChargeRefusal = DecisionInput<typeof decisions.brokerCharge>['reason'];

/** The call's record as the answer says, naming the policy decision behind it (its decision event's id). */
function recordOf(call: Resolved, verdict: Verdict, answer: CheckAnswer): NewCallRecord {
  return {
    id: call.callId,
    grant_id: call.chain[0]!.id,
    root_id: call.chain[0]!.root_id,
    tool: call.request.tool,
    principal_kind: verdict.principal.kind,
    principal_id: verdict.principal.id,
    outcome: answer.decision === 'allow' ? 'pending' : 'denied',
    reason: answer.reason,
    approval_id: null,
    decision_id: verdict.decisionId,
    args_digest: call.argsDigest,
    requested_at: call.requestedAt,
  };
}

function approvalRequestOf(deps: SettleDeps, call: Resolved, verdict: Verdict) {
  return {
    callId: call.callId,
    grantId: call.chain[0]!.id,
    podId: call.chain[0]!.target.pod_id,
    tool: call.request.tool,
    argsDigest: call.argsDigest,
    principal: verdict.principal,
    requestedAt: call.requestedAt,
    ttlMs: deps.approvalTtlMs,
    grantExpiresAtMs: Math.min(...call.chain.map((link) => link.expires_at_ms)),
    args: call.request.args,
    checkInput: verdict.kind === 'ask' ? verdict.checkInput : {},
  };
}
