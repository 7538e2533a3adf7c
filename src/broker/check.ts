import { decisions } from '../kernel/decisions/catalogue';
import { digestOf } from '../kernel/digest';
import { DependencyUnavailableError } from '../kernel/dependency';
import { brokerDecisions } from './metrics';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import type { BudgetAnswer } from '../budget/sliding-window';
import { rebuildTreeWindows } from '../budget/rebuild';
import type { Chain } from './chain';
import { verifyBroker, type CheckingBroker } from './authenticator';
import { confirmBroker, subjectOfCall, type CallSubject, type SubjectInput } from './credentials';
import { checkInput } from './policy-input';
import { approvalFact, requestApproval, spendApproval } from '../approvals/requests';
import type { BrokerDeps } from './deps';
import { NO_PRINCIPAL_FACTS, type TreeSnapshot } from './tree-facts';

export interface CheckRequest extends SubjectInput {
  grantId: string;
  tool: string;
  args: Record<string, unknown>;
  /** A re-sent check: the approval a human gave this very call (CONTRACT §9). */
  approvalId?: string;
}

export interface CheckAnswer {
  decision: 'allow' | 'deny' | 'approval_required';
  callId: string;
  reason: string;
  approvalId?: string;
  approval?: { id: string; expiresAt: string };
  /** The message of the org rule whose reason this is (CONTRACT §10). */
  message?: string;
  retryAfterMs?: number;
  budget: { remaining: number; resetMs: number };
}

/** A tree whose facts change between every load and check is refused rather than looped on. */
const MAX_ATTEMPTS = 4;
/** Policy reasons that refuse the request itself (a problem document, nothing recorded). */
const REFUSALS = ['not_found', 'subject_token_invalid', 'principal_assertion_refused'] as const;

/**
 * The broker pre-call check (CONTRACT §5). Warm, it costs one Redis round trip (the budget script,
 * which also confirms the cached facts are current) and one share of a group-committed INSERT.
 *
 * Order: the broker is authenticated (by the route), then the grant must be its own (404 for
 * anything else, with a remembered token confirmed first), then the subject and the rest.
 */
export async function checkCall(deps: BrokerDeps, broker: CheckingBroker, request: CheckRequest): Promise<CheckAnswer> {
  const requestedAt = new Date(deps.clock.now());
  const chain = await deps.chains.get(request.grantId);
  if (!chain) {
    // Only a broker whose token is valid right now learns that a grant does not exist.
    if (broker.remembered) await verifyBroker(deps, broker.tokenHash);
    throw new ApiError('not_found', 'no such grant');
  }
  const rootId = chain[0]!.root_id;
  const argsDigest = digestOf(request.args);
  if (chain[0]!.broker_id !== broker.brokerId) await refuseWithoutSubject(deps, broker, chain, request, argsDigest);
  const approval = request.approvalId ? await approvalFact(deps.db, request.approvalId) : undefined;

  let snapshot = deps.trees.current(rootId, deps.clock.now()) ?? (await freshSnapshot(deps, rootId));
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
    const now = deps.clock.now();
    await confirmBroker(deps, snapshot, broker);
    const subject = await subjectOfCall(deps, snapshot, request, now);
    const facts = await deps.trees.factsFor(snapshot, chain, subject.principal);
    const decision = decide(deps, { broker, request, argsDigest, approval, subject, now }, chain, facts);
    const principal = subject.principal;
    if (!principal) throw new Error('broker/check went on without a verified principal');

    const callId = newId('call');
    const levels = budgetLevels(chain);
    const answer = await deps.budget.run({
      rootId,
      levels,
      expectedVersion: snapshot.version,
      mode: decision.allow ? 'consume' : 'probe',
    });
    if (answer.kind === 'stale' || answer.kind === 'missing') {
      const version = answer.kind === 'stale' ? answer.version : await rebuildTreeWindows(deps.db, deps.budget, rootId);
      snapshot = deps.trees.renew(rootId, version, deps.clock.now());
      continue;
    }
    const orgMessage = decision.org?.denials.find((finding) => finding.reason === decision.reason)?.message;
    let result = answerOf(callId, String(decision.reason), answer, orgMessage || undefined);
    let approvalId: string | null = result.decision === 'allow' ? decision.decisionId : null;
    if (result.decision === 'allow' && decision.consumes_approval && request.approvalId) {
      // Exactly one re-send uses an approval; the others are told it is used, their unit given back.
      approvalId = request.approvalId;
      if (!(await spendApproval(deps.db, request.approvalId, callId, new Date(now)))) {
        if (answer.kind === 'allowed') await deps.budget.refund(rootId, levels, answer.atMs).catch(() => undefined);
        result = {
          decision: 'deny',
          callId,
          reason: 'approval_used',
          budget: { remaining: result.budget.remaining + 1, resetMs: result.budget.resetMs },
        };
      }
    } else if (result.reason === 'approval_required') {
      const asked = await requestApproval(deps.db, {
        callId,
        grantId: chain[0]!.id,
        podId: chain[0]!.target.pod_id,
        tool: request.tool,
        argsDigest,
        principal,
        requestedAt,
        ttlMs: deps.approvalTtlMs,
        grantExpiresAtMs: Math.min(...chain.map((link) => link.expires_at_ms)),
      });
      approvalId = asked.id;
      result = { ...result, decision: 'approval_required', approvalId: asked.id, approval: asked };
    }
    try {
      await deps.trail.write({
        id: callId,
        grant_id: chain[0]!.id,
        tool: request.tool,
        principal_kind: principal.kind,
        principal_id: principal.id,
        outcome: result.decision === 'allow' ? 'pending' : result.decision === 'approval_required' ? 'awaiting_approval' : 'denied',
        reason: result.reason,
        approval_id: approvalId,
        args_digest: argsDigest,
        requested_at: requestedAt,
      });
    } catch (error) {
      // No record, no answer: the broker must not run a call the trail does not show. The unit
      // it took is given back, so every consumed unit has its record.
      deps.log.error({ err: { message: (error as Error).message }, callId }, 'call record not written');
      if (answer.kind === 'allowed') await deps.budget.refund(rootId, levels, answer.atMs).catch(() => undefined);
      throw new DependencyUnavailableError('the call trail could not be written');
    }
    brokerDecisions.labels(result.decision, result.reason).inc();
    return result;
  }
  throw new DependencyUnavailableError('the facts of this grant kept changing; try again');
}

/**
 * Another broker's grant (issue 8 §3: authenticate, then ownership, then everything else). The
 * policy is asked with no subject and no tree facts: neither the forwarded token (a JWKS fetch,
 * a runtime token's lastUsedAt), nor the approval, nor the tree's Redis state is looked at, so
 * the answer is the same 404 as for a grant that does not exist, whichever of them is failing.
 * Without a principal broker/check refuses whatever else holds (not_found first, else
 * subject_token_invalid), so this never goes on to an allow.
 */
async function refuseWithoutSubject(
  deps: BrokerDeps,
  broker: CheckingBroker,
  chain: Chain,
  request: CheckRequest,
  argsDigest: string,
): Promise<never> {
  if (broker.remembered) await verifyBroker(deps, broker.tokenHash);
  const subject = { principal: null, source: 'subject_token' } as const;
  decide(deps, { broker, request, argsDigest, subject, now: deps.clock.now() }, chain, NO_PRINCIPAL_FACTS);
  throw new Error('broker/check did not refuse a call without a subject');
}

interface CallAsked {
  broker: CheckingBroker;
  request: CheckRequest;
  argsDigest: string;
  approval?: Awaited<ReturnType<typeof approvalFact>>;
  subject: CallSubject;
  now: number;
}

/** broker/check on the call's facts; a refusal of the request itself (404, 401, 403) is thrown. */
function decide(deps: BrokerDeps, call: CallAsked, chain: Chain, facts: Parameters<typeof checkInput>[2]) {
  const input = checkInput(
    {
      brokerId: call.broker.brokerId,
      tool: call.request.tool,
      args: call.request.args,
      argsDigest: call.argsDigest,
      approval: call.approval,
      subject: call.subject,
      trustAssertedPrincipal: deps.trustAssertedPrincipal,
      now: call.now,
      localTime: deps.localTime(call.now),
    },
    chain,
    facts,
  );
  const decision = deps.policy.evaluate(decisions.brokerCheck, input);
  const refusal = REFUSALS.find((code) => decision.reasons.includes(code));
  if (refusal) throw refusalError(refusal);
  return decision;
}

function refusalError(code: (typeof REFUSALS)[number]): ApiError {
  switch (code) {
    case 'not_found':
      return new ApiError('not_found', 'no such grant');
    case 'subject_token_invalid':
      return new ApiError('subject_token_invalid');
    case 'principal_assertion_refused':
      return new ApiError('principal_assertion_refused', "forward the caller's own credential as subjectToken");
  }
}

/**
 * Reads the tree's current version before any fact is loaded, so the facts are at least as new.
 * No version at all: Redis lost the tree, whose windows are rebuilt from the call trail first.
 */
async function freshSnapshot(deps: BrokerDeps, rootId: string): Promise<TreeSnapshot> {
  const { budget, trees } = deps;
  const answer = await budget.run({ rootId, levels: [], expectedVersion: '', mode: 'probe' });
  if (answer.kind === 'missing') return trees.renew(rootId, await rebuildTreeWindows(deps.db, budget, rootId), deps.clock.now());
  if (answer.kind !== 'stale') throw new DependencyUnavailableError('the budget script did not report the tree version');
  return trees.renew(rootId, answer.version, deps.clock.now());
}

function budgetLevels(chain: Chain) {
  return chain.map((grant) => ({ grantId: grant.id, calls: grant.budget.calls, windowMs: grant.budget.window_ms }));
}

function answerOf(
  callId: string,
  policyReason: string,
  answer: Exclude<BudgetAnswer, { kind: 'stale' | 'missing' }>,
  message: string | undefined,
): CheckAnswer {
  switch (answer.kind) {
    case 'allowed':
      return { decision: 'allow', callId, reason: 'allowed', budget: { remaining: answer.remaining, resetMs: answer.resetMs } };
    case 'exhausted':
      return {
        decision: 'deny',
        callId,
        reason: 'budget_exhausted',
        retryAfterMs: answer.retryAfterMs,
        budget: { remaining: 0, resetMs: answer.resetMs },
      };
    case 'probed':
      return {
        decision: 'deny',
        callId,
        reason: policyReason,
        ...(message ? { message } : {}),
        budget: { remaining: answer.remaining, resetMs: answer.resetMs },
      };
  }
}
