import { randomUUID } from 'node:crypto';
import type { Deps } from '../deps';
import { digestOf } from '../digest';
import { DependencyUnavailableError } from '../http/dependency-failure';
import { brokerDecisions } from '../http/metrics';
import { ApiError } from '../http/problem';
import { newId } from '../ids';
import type { SlidingWindowBudget, BudgetAnswer } from '../budget/sliding-window';
import type { Chain, ChainCache } from './chain';
import type { CallTrailWriter } from './call-trail';
import { brokerOfToken, principalOfCall, type SubjectInput } from './credentials';
import { checkInput } from './policy-input';
import type { TreeFactsCache, TreeSnapshot } from './tree-facts';

export interface BrokerComponents {
  chains: ChainCache;
  trees: TreeFactsCache;
  budget: SlidingWindowBudget;
  trail: CallTrailWriter;
}

export interface CheckRequest extends SubjectInput {
  grantId: string;
  tool: string;
  args: unknown;
}

export interface CheckAnswer {
  decision: 'allow' | 'deny';
  callId: string;
  reason: string;
  retryAfterMs?: number;
  budget: { remaining: number; resetMs: number };
}

const ENTRYPOINT = 'broker/check/decision';
/** A tree whose facts change between every load and check is refused rather than looped on. */
const MAX_ATTEMPTS = 4;

function badBrokerToken(): ApiError {
  return new ApiError('unauthenticated', 'the credential is invalid, expired or revoked', {}, { 'WWW-Authenticate': 'Bearer realm="grant-broker"' });
}

/**
 * The broker pre-call check (CONTRACT §5). Warm, it costs one Redis round trip (the budget script,
 * which also confirms the cached facts are current) and one share of a group-committed INSERT.
 */
export async function checkCall(deps: Deps, broker: BrokerComponents, brokerToken: string, request: CheckRequest): Promise<CheckAnswer> {
  const requestedAt = new Date();
  const argsDigest = digestOf(request.args);
  const chain = await broker.chains.get(request.grantId);
  if (!chain) {
    const brokerId = await brokerOfToken(deps, undefined, brokerToken);
    if (!brokerId) throw badBrokerToken();
    throw new ApiError('not_found', 'no such grant');
  }
  const rootId = chain[0]!.root_id;

  let snapshot = broker.trees.current(rootId, Date.now()) ?? (await freshSnapshot(broker, chain));
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
    const now = Date.now();
    const brokerId = await brokerOfToken(deps, snapshot, brokerToken);
    if (!brokerId) throw badBrokerToken();
    const principal = await principalOfCall(deps, snapshot, request, now);
    const facts = await broker.trees.factsFor(snapshot, chain, principal);
    const decision = deps.policy.evaluate(ENTRYPOINT, checkInput({ brokerId, tool: request.tool, principal, now }, chain, facts));
    if (decision.reasons.includes('not_found')) throw new ApiError('not_found', 'no such grant');

    const callId = newId('call');
    const answer = await broker.budget.run({
      rootId,
      levels: budgetLevels(chain),
      expectedVersion: snapshot.version,
      mode: decision.allow ? 'consume' : 'probe',
      callId,
      freshVersion: randomUUID(),
    });
    if (answer.kind === 'stale') {
      snapshot = broker.trees.renew(rootId, answer.version, Date.now());
      continue;
    }
    const result = answerOf(callId, String(decision.reason), answer);
    try {
      await broker.trail.write({
        id: callId,
        grant_id: chain[0]!.id,
        tool: request.tool,
        principal_kind: principal.kind,
        principal_id: principal.id,
        outcome: result.decision === 'allow' ? 'pending' : 'denied',
        reason: result.reason,
        approval_id: result.decision === 'allow' ? decision.decisionId : null,
        args_digest: argsDigest,
        requested_at: requestedAt,
      });
    } catch (error) {
      // No record, no answer: the broker must not run a call the trail does not show. (An
      // allowed call's unit stays consumed: the budget errs on the side of fewer calls.)
      deps.log.error({ err: { message: (error as Error).message }, callId }, 'call record not written');
      throw new DependencyUnavailableError('the call trail could not be written');
    }
    brokerDecisions.labels(result.decision, result.reason).inc();
    return result;
  }
  throw new DependencyUnavailableError('the facts of this grant kept changing; try again');
}

/** Reads the tree's current version before any fact is loaded, so the facts are at least as new. */
async function freshSnapshot(broker: BrokerComponents, chain: Chain): Promise<TreeSnapshot> {
  const rootId = chain[0]!.root_id;
  const answer = await broker.budget.run({
    rootId,
    levels: [],
    expectedVersion: '',
    mode: 'probe',
    callId: '',
    freshVersion: randomUUID(),
  });
  if (answer.kind !== 'stale') throw new DependencyUnavailableError('the budget script did not report the tree version');
  return broker.trees.renew(rootId, answer.version, Date.now());
}

function budgetLevels(chain: Chain) {
  return chain.map((grant) => ({ grantId: grant.id, calls: grant.budget.calls, windowMs: grant.budget.window_ms }));
}

function answerOf(callId: string, policyReason: string, answer: Exclude<BudgetAnswer, { kind: 'stale' }>): CheckAnswer {
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
      return { decision: 'deny', callId, reason: policyReason, budget: { remaining: answer.remaining, resetMs: answer.resetMs } };
  }
}
