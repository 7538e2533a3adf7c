import { decisions } from '../kernel/decisions/catalogue';
import { ApiError } from '../kernel/errors';
import type { HumanPrincipal } from '../kernel/principals';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import { enforce } from '../policy/enforce';
import type { ApprovalGrant, ApprovalsDeps } from './deps';
import { tellOfApproval } from './messages';
import { approvalsByOutcome, approvalTimeToDecision } from './metrics';
import { presentApproval, stateOf } from './presenters';
import { waitForInbox } from './inbox-wait';
import {
  decidableCandidates,
  decidablePodIds,
  decideApproval,
  eraseExpiredArgs,
  findApproval,
  roleIn,
  type ApprovalRow,
} from './repository';

type Action = 'read' | 'list' | 'approve' | 'deny' | 'read_args';

interface ListQuery {
  state?: 'pending' | 'approved' | 'denied' | 'used' | 'expired';
  limit: number;
  cursor?: string;
  requestedAfter?: string;
  waitMs: number;
}

interface GrantContext {
  facts: ApprovalGrant;
  members: string[];
  role: string | undefined;
}

/**
 * The human side of approvals. Every read and decision is approvals/decide's call;
 * the database only narrows the list to approvals the caller could be a decider of, and makes a
 * decision happen once (the row changes only while it is pending and unexpired).
 */
export function createApprovalsService(deps: ApprovalsDeps) {
  /** What approvals/decide is asked about on a grant: its facts, its pod's members, the caller's role there. */
  async function grantContext(principal: HumanPrincipal, facts: ApprovalGrant) {
    const podId = facts.grant.target_pod_id;
    const [members, role] = await Promise.all([deps.grants.memberIds(podId), roleIn(deps.db, podId, principal.userId)]);
    return { facts, members, role };
  }

  /** approvals/decide's answer for this caller, row and action, on facts already loaded. */
  function answer(principal: HumanPrincipal, row: ApprovalRow, context: GrantContext, action: Action) {
    const evaluate = (asked: Action) =>
      deps.policy.evaluate(decisions.approvalsDecide, {
        action: asked,
        now_ms: deps.clock.now(),
        caller: { kind: 'human', id: principal.userId },
        ...(context.role ? { caller_role: context.role } : {}),
        approval: {
          principal: { kind: row.principal_kind, id: row.principal_id },
          state: row.state,
          expires_at_ms: row.expires_at.getTime(),
        },
        grant: { chain: context.facts.chain, members: context.members, connection: context.facts.connection },
      });
    const decision = evaluate(action);
    /** Whether this caller reads the call's arguments: whoever may decide it now. */
    const readsArgs = () => decision.allow && evaluate('read_args').allow;
    return { facts: context.facts, decision, readsArgs };
  }

  /** approvals/decide's answer for this caller, row and action; undefined when the grant is gone. */
  async function ask(principal: HumanPrincipal, row: ApprovalRow, action: Action) {
    const facts = await deps.grants.facts(row.grant_id);
    if (!facts) return undefined;
    return answer(principal, row, await grantContext(principal, facts), action);
  }

  /**
   * The approval as this caller sees it: with the call's arguments for a decider (null once it
   * has left `pending`), without them for anyone else. Arguments of an approval that expired by
   * the clock are erased first, whoever reads it.
   */
  async function view(row: ApprovalRow, now: number, readsArgs: () => boolean) {
    const pending = stateOf(row, now) === 'pending';
    if (!pending && row.args_sealed) await eraseExpiredArgs(deps.db, new Date(now), { ids: [row.id] });
    return presentApproval(row, now, readsArgs() ? deps.argsVault.open(row, pending) : undefined);
  }

  async function judge(principal: HumanPrincipal, row: ApprovalRow, action: Exclude<Action, 'list'>) {
    const answer = await ask(principal, row, action);
    if (!answer) throw new ApiError('not_found');
    enforce(answer.decision);
    return answer;
  }

  async function get(principal: HumanPrincipal, id: string) {
    const row = await findApproval(deps.db, id);
    if (!row) throw new ApiError('not_found');
    const { readsArgs } = await judge(principal, row, 'read');
    return view(row, deps.clock.now(), readsArgs);
  }

  async function decide(principal: HumanPrincipal, id: string, state: 'approved' | 'denied', note: string | undefined) {
    const row = await findApproval(deps.db, id);
    if (!row) throw new ApiError('not_found');
    const { facts } = await judge(principal, row, state === 'approved' ? 'approve' : 'deny');
    const at = new Date(deps.clock.now());
    const decided = await deps.db.transaction(async (trx) => {
      const updated = await decideApproval(trx, id, { state, decidedBy: principal.userId, note: note ?? null, at });
      // Another decider got there first (or it expired meanwhile): this one changes nothing.
      if (!updated) throw new ApiError('approval_already_decided');
      await tellOfApproval(trx, {
        type: 'approval.decided',
        podId: facts.grant.target_pod_id,
        at,
        approval: presentApproval(updated, at.getTime()),
        consoleUrl: deps.consoleUrl(id),
      });
      return updated;
    });
    approvalsByOutcome.labels(state).inc();
    approvalTimeToDecision.labels(state).observe((at.getTime() - row.requested_at.getTime()) / 1000);
    // Decided, it keeps no arguments: the decider sees them as null.
    return presentApproval(decided, deps.clock.now(), deps.argsVault.open(decided, false));
  }

  async function list(principal: HumanPrincipal, query: ListQuery, signal?: AbortSignal) {
    const look = () => listPage(principal, query);
    if (query.waitMs === 0) return look();
    return waitForInbox(deps.waker, await decidablePodIds(deps.db, principal.userId), query.waitMs, signal, look);
  }

  async function listPage(principal: HumanPrincipal, query: ListQuery) {
    const now = deps.clock.now();
    const before = decodeCursor(query.cursor) ?? undefined;
    const requestedAfter = query.requestedAfter ? new Date(query.requestedAfter) : undefined;
    const filter = { state: query.state, now: new Date(now), before, requestedAfter };
    const rows = await decidableCandidates(deps.db, principal.userId, filter, query.limit + 1);
    const page = rows.slice(0, query.limit);
    // The facts are loaded once per distinct grant (one chain query for the page) and pod; the
    // rule is still asked per approval, since its answer depends on the approval's own principal,
    // state and expiry.
    const grants = await deps.grants.factsMany([...new Set(page.map((row) => row.grant_id))]);
    const contexts = new Map<string, GrantContext>();
    await Promise.all([...grants].map(async ([grantId, facts]) => contexts.set(grantId, await grantContext(principal, facts))));
    // What the caller may decide (approvals/decide, action `list`): not their own calls, and
    // nothing still pending on a grant that can no longer be used.
    const shown = page.flatMap((row) => {
      const context = contexts.get(row.grant_id);
      const judged = context && answer(principal, row, context, 'list');
      return judged?.decision.allow ? [{ row, judged }] : [];
    });
    // Arguments of approvals that expired by the clock are erased before they are shown, in one statement.
    const expired = shown.filter(({ row }) => stateOf(row, now) !== 'pending' && row.args_sealed).map(({ row }) => row.id);
    if (expired.length > 0) await eraseExpiredArgs(deps.db, new Date(now), { ids: expired });
    // Only the page returned is opened, and only for its deciders.
    const items = shown.map(({ row, judged }) =>
      presentApproval(row, now, judged.readsArgs() ? deps.argsVault.open(row, stateOf(row, now) === 'pending') : undefined),
    );
    const last = page.at(-1);
    return {
      items,
      nextCursor: rows.length > query.limit && last ? encodeCursor(last.requested_at, last.id) : null,
    };
  }

  /** The broker's long poll: own grants only; waits while the approval is pending. */
  async function waitForBroker(brokerId: string, id: string, waitMs: number) {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const row = await findApproval(deps.db, id);
      const grantBroker = row ? await deps.grants.brokerOf(row.grant_id) : undefined;
      if (!row || grantBroker !== brokerId) throw new ApiError('not_found');
      const approval = presentApproval(row, deps.clock.now());
      if (approval.state !== 'pending' || Date.now() >= deadline) return approval;
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, Math.max(0, deadline - Date.now()))));
    }
  }

  return { get, decide, list, waitForBroker };
}

export type ApprovalsService = ReturnType<typeof createApprovalsService>;
