import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { KeptArgsColumns } from './args-vault';

type Queryable = Database | Knex.Transaction;

export type StoredApprovalState = 'pending' | 'approved' | 'denied' | 'used';

export interface ApprovalRow extends KeptArgsColumns {
  id: string;
  grant_id: string;
  call_id: string;
  tool: string;
  args_digest: string;
  principal_kind: 'user' | 'agent';
  principal_id: string;
  state: StoredApprovalState;
  requested_at: Date;
  expires_at: Date;
  decided_by: string | null;
  decided_at: Date | null;
  note: string | null;
  used_by_call_id: string | null;
}

/**
 * The columns that erase the kept arguments: every statement that moves an approval out of
 * `pending` sets them, so no ciphertext outlives the state it was kept for.
 */
const ERASED_ARGS = { args_sealed: null, args_key_id: null } as const;

export async function insertApproval(db: Queryable, row: Omit<ApprovalRow, 'decided_by' | 'decided_at' | 'note' | 'used_by_call_id'>) {
  await db('approvals').insert(row);
}

export function findApproval(db: Queryable, id: string): Promise<ApprovalRow | undefined> {
  return db<ApprovalRow>('approvals').where({ id }).first();
}

/**
 * Uses an approved approval for one call, atomically: of concurrent re-sends (on any replica)
 * exactly one sees its row updated. Expiry is the clock's, not a sweeper's.
 */
export async function useApproval(db: Queryable, id: string, callId: string, now: Date): Promise<boolean> {
  const updated = await db('approvals')
    .where({ id, state: 'approved' })
    .andWhere('expires_at', '>', now)
    .update({ state: 'used', used_by_call_id: callId, ...ERASED_ARGS });
  return updated === 1;
}

/** Approves or denies a pending approval, once; undefined when it was no longer pending. */
export async function decideApproval(
  trx: Queryable,
  id: string,
  decision: { state: 'approved' | 'denied'; decidedBy: string; note: string | null; at: Date },
): Promise<ApprovalRow | undefined> {
  const [row] = await trx<ApprovalRow>('approvals')
    .where({ id, state: 'pending' })
    .andWhere('expires_at', '>', decision.at)
    .update({ state: decision.state, decided_by: decision.decidedBy, decided_at: decision.at, note: decision.note, ...ERASED_ARGS })
    .returning('*');
  return row;
}

/**
 * An approval does not outlive its grant. In the revoke's transaction, the pending
 * and approved approvals of the grants it revoked end at the revocation: their `expiresAt`
 * becomes `revokedAt`, so from then on they read as `expired` everywhere (the state is derived
 * from expires_at by the clock; `expired` is never stored) and leave the deciders' pending list.
 * A pending one also records how it ended (`decidedAt` = revokedAt, note 'grant revoked', no
 * decider); an approved one keeps its decider and note. The grants domain calls it through a port
 * (GrantsDeps.expireApprovals): src/approvals builds on src/grants.
 */
export async function expireApprovalsOfGrants(trx: Knex.Transaction, grantIds: readonly string[], revokedAt: Date): Promise<void> {
  if (grantIds.length === 0) return;
  const open = () => trx('approvals').whereIn('grant_id', grantIds).andWhere('expires_at', '>', revokedAt);
  await open()
    .where('state', 'pending')
    .update({ expires_at: revokedAt, decided_at: revokedAt, note: 'grant revoked', ...ERASED_ARGS });
  await open().where('state', 'approved').update({ expires_at: revokedAt });
}

/**
 * Erases the kept arguments of approvals that expired by the clock (`expired` is never stored, so
 * no statement moves them out of `pending`): those of `ids` when given (what a read is about to
 * show), else up to `batchSize` of any. Answers how many it erased.
 */
export function eraseExpiredArgs(db: Queryable, now: Date, scope: { ids: readonly string[] } | { batchSize: number }): Promise<number> {
  const expired = () => db('approvals').select('id').whereNotNull('args_sealed').andWhere('expires_at', '<=', now);
  const ids = 'ids' in scope ? expired().whereIn('id', scope.ids) : expired().limit(scope.batchSize);
  return db('approvals').whereIn('id', ids).andWhere('expires_at', '<=', now).update(ERASED_ARGS);
}

/**
 * Approvals a human may be able to decide, newest first: of grants on a connection they own or
 * targeting a pod where they are an owner or admin. The policy judges each row it returns.
 */
export function decidableCandidates(
  db: Queryable,
  callerId: string,
  filter: {
    state?: 'pending' | 'approved' | 'denied' | 'used' | 'expired';
    now: Date;
    before?: { at: Date; id: string };
    requestedAfter?: Date;
  },
  size: number,
): Promise<ApprovalRow[]> {
  const query = db<ApprovalRow>('approvals as a')
    .join('grants as g', 'g.id', 'a.grant_id')
    .join('connections as c', 'c.id', 'g.connection_id')
    .leftJoin('pod_members as m', (join) => join.on('m.pod_id', 'g.target_pod_id').andOnVal('m.member_id', callerId))
    .where((scope) => scope.where('c.owner_id', callerId).orWhereIn('m.role', ['owner', 'admin']))
    .select('a.*');
  const { state, now } = filter;
  if (state === 'expired') query.whereIn('a.state', ['pending', 'approved']).andWhere('a.expires_at', '<=', now);
  else if (state === 'pending' || state === 'approved') query.where('a.state', state).andWhere('a.expires_at', '>', now);
  else if (state) query.where('a.state', state);
  if (filter.requestedAfter) query.where('a.requested_at', '>', filter.requestedAfter);
  if (filter.before) query.whereRaw('(a.requested_at, a.id) < (?, ?)', [filter.before.at, filter.before.id]);
  return query
    .orderBy([
      { column: 'a.requested_at', order: 'desc' },
      { column: 'a.id', order: 'desc' },
    ])
    .limit(size);
}

/** The decider's role in the grant's target pod (for approvals/decide). */
export async function roleIn(db: Queryable, podId: string, memberId: string): Promise<string | undefined> {
  const row = await db('pod_members').where({ pod_id: podId, member_id: memberId }).first('role');
  return row?.role as string | undefined;
}

/**
 * The pods whose approvals a human may be a decider of (owner or admin there, or owner of a
 * connection whose grants target it): what the inbox's long poll listens to.
 */
export async function decidablePodIds(db: Queryable, callerId: string): Promise<string[]> {
  const rows = await db('pod_members')
    .where('member_id', callerId)
    .whereIn('role', ['owner', 'admin'])
    .select('pod_id')
    .union((owned) =>
      owned.from('grants as g').join('connections as c', 'c.id', 'g.connection_id').where('c.owner_id', callerId).select('g.target_pod_id'),
    );
  return rows.map((row: { pod_id: string }) => row.pod_id);
}

/** A row of the approvals' outbox (approval_messages). */
export interface ApprovalMessageRow {
  id: string;
  type: 'approval.requested' | 'approval.decided';
  pod_id: string;
  at: Date;
  /** `{approval, consoleUrl}`: the approval as a webhook carries it, never its arguments. */
  webhook_data: Record<string, unknown>;
  /** The installed agents that hear of it (the call's principal, when an agent), and what they hear. */
  agent_ids: string[];
  agent_data: Record<string, unknown> | null;
}

export type MessageReader = 'for_webhooks' | 'for_agents';
const TAKEN: Record<MessageReader, string> = { for_webhooks: 'webhooks_taken_at', for_agents: 'agents_taken_at' };

/** Writes one message in the caller's transaction; one no agent hears of is taken for agents at once. */
export async function insertApprovalMessage(trx: Knex.Transaction, row: Omit<ApprovalMessageRow, 'id'>): Promise<void> {
  await trx('approval_messages').insert({ ...row, agents_taken_at: row.agent_ids.length === 0 ? row.at : null });
}

/**
 * Marks up to `limit` messages this reader has not taken as taken, in the caller's transaction,
 * and answers them oldest first. SKIP LOCKED lets replicas split them; the marks stand only if the
 * transaction commits.
 */
export async function takeApprovalMessages(trx: Knex.Transaction, reader: MessageReader, limit: number): Promise<ApprovalMessageRow[]> {
  const { rows } = await trx.raw<{ rows: ApprovalMessageRow[] }>(
    `update approval_messages set ?? = now()
      where id in (select id from approval_messages where ?? is null order by id limit ? for update skip locked)
      returning id, type, pod_id, at, webhook_data, agent_ids, agent_data`,
    [TAKEN[reader], TAKEN[reader], limit],
  );
  return rows.sort((a, b) => Number(a.id) - Number(b.id));
}

/** Deletes up to `batchSize` messages every reader has taken; answers how many. */
export function deleteTakenMessages(db: Queryable, batchSize: number): Promise<number> {
  return db('approval_messages')
    .whereIn('id', db('approval_messages').select('id').whereNotNull('webhooks_taken_at').whereNotNull('agents_taken_at').limit(batchSize))
    .delete();
}
