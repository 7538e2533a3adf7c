import type { BudgetLevel } from '../../budget/sliding-window';
import type { BrokerDeps } from '../deps';
import type { Chain } from '../reads';
import type { Charged, Resolved, Verdict } from './stages';

export type ChargeDeps = Pick<BrokerDeps, 'approvals' | 'budget' | 'rebuild'>;

/**
 * The third stage, the first with a side effect: one budget script over the whole chain, which
 * also confirms that the facts were read under the tree's current version (else `stale`: resolve
 * again) and the decision under the tree's current labels (else `relabelled`: decide again). An
 * allowed call takes one unit at every level and leaves its labels and its tool's count on the
 * tree; anything else only looks. Every answer brings the tree's session for its next check.
 *
 * A call allowed by an approval takes the approval before the unit, as a claim that the call's
 * record later commits with: of concurrent re-sends one holds it and the others find it used
 * before any unit is taken; a budget that turns out full, or stale facts, give it back.
 */
export async function charge(deps: ChargeDeps, call: Resolved, verdict: Verdict): Promise<Charged> {
  const rootId = call.chain[0]!.root_id;
  if (!call.treeVersion) throw new Error('broker/check allowed a grant of another broker');
  const approvalId = verdict.kind === 'allow' && verdict.spendsApproval ? call.request.approvalId : undefined;
  const claim = approvalId ? await deps.approvals.claim(approvalId, call.callId, new Date(call.nowMs)) : undefined;
  try {
    const claimed = !approvalId || claim !== undefined;
    const answer = await deps.budget.run({
      rootId,
      levels: budgetLevels(call.chain),
      expectedVersion: call.treeVersion,
      mode: verdict.kind === 'allow' && claimed ? 'consume' : 'probe',
      session: {
        stamp: call.session.stamp,
        tool: call.request.tool,
        labels: verdict.kind === 'allow' ? verdict.labels : [],
        ...(verdict.exactCalls ? { seenCalls: call.session.calls[call.request.tool] ?? 0 } : {}),
      },
    });
    if (claim && answer.kind !== 'allowed') await claim.release();
    switch (answer.kind) {
      case 'missing':
        // Redis lost the tree: its windows are rebuilt from the call trail, then resolved again
        // under what the rebuild left (its session too, so the policy decides once more, not twice).
        return rebuilt(deps, rootId);
      case 'stale':
        return { kind: 'stale', treeVersion: answer.version, session: answer.session };
      case 'session':
        return { kind: 'relabelled', session: answer.session };
      case 'label_limit':
        return { kind: 'label_limit', resetMs: 0 };
      case 'allowed':
        return {
          kind: 'taken',
          atMs: answer.atMs,
          remaining: answer.remaining,
          resetMs: answer.resetMs,
          ...(claim ? { claim } : {}),
        };
      case 'probed': {
        const probed = { remaining: answer.remaining, resetMs: answer.resetMs };
        return claimed ? { kind: 'probed', ...probed } : { kind: 'approval_used', ...probed };
      }
      case 'exhausted':
        return { kind: 'exhausted', retryAfterMs: answer.retryAfterMs, resetMs: answer.resetMs, fullLevels: answer.fullLevels };
    }
  } catch (error) {
    await claim?.release();
    throw error;
  }
}

async function rebuilt(deps: ChargeDeps, rootId: string): Promise<Charged> {
  const version = await deps.rebuild(rootId);
  const state = await deps.budget.treeState(rootId);
  return state ? { kind: 'stale', treeVersion: state.version, session: state.session } : { kind: 'stale', treeVersion: version };
}

export function budgetLevels(chain: Chain): BudgetLevel[] {
  return chain.map((grant) => ({ grantId: grant.id, calls: grant.budget.calls, windowMs: grant.budget.window_ms }));
}
