import type { Knex } from 'knex';
import type { Client } from 'pg';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

/** The `type` of an event. */
export type EventType =
  | 'grant.created'
  | 'grant.attenuated'
  | 'grant.revoked'
  | 'pod.member_added'
  | 'pod.member_removed'
  | 'agent.updated'
  | 'runtime.start_requested'
  | 'runtime.stop_requested'
  | 'approval.requested'
  | 'approval.decided';

export const EVENTS_CHANNEL = 'agent_events';

export interface EventRow {
  id: string;
  agent_id: string;
  pod_id: string;
  type: EventType;
  data: Record<string, unknown>;
  occurred_at: Date;
  delivery_count: number;
  leased_until: Date | null;
  acked_at: Date | null;
}

export async function insertEvents(
  trx: Knex.Transaction,
  rows: ReadonlyArray<Pick<EventRow, 'id' | 'agent_id' | 'pod_id' | 'type' | 'data'>>,
) {
  await trx('events').insert(rows);
}

/** NOTIFY on the events channel, one per agent: delivered at commit, a wake-up hint for its polls. */
export async function notifyAgents(trx: Knex.Transaction, agentIds: readonly string[]): Promise<void> {
  for (const agentId of agentIds) {
    await trx.raw('select pg_notify(?, ?)', [EVENTS_CHANNEL, agentId]);
  }
}

/** LISTEN on the events channel, on the waker's own connection. */
export async function listenForEvents(client: Client): Promise<void> {
  await client.query(`listen ${EVENTS_CHANNEL}`);
}

/**
 * Leases up to `limit` of the agent's deliverable events (never acked, and not under a live lease
 * at `now`) for `visibilityMs`, oldest first, counting the delivery. One statement: SKIP LOCKED
 * lets two concurrent polls of the same agent split the pending events instead of both taking
 * them, and the lease (not the row lock) keeps them apart once the statement commits. The rows
 * come back in no order.
 */
export async function leaseDeliverable(
  db: Queryable,
  agentId: string,
  limit: number,
  visibilityMs: number,
  now: Date,
): Promise<EventRow[]> {
  const result = await db.raw<{ rows: EventRow[] }>(
    `update events
        set delivery_count = delivery_count + 1,
            leased_until = ?::timestamptz + ?::bigint * interval '1 millisecond'
      where id in (
        select id from events
         where agent_id = ? and acked_at is null and (leased_until is null or leased_until <= ?::timestamptz)
         order by id
         limit ?
         for update skip locked
      )
      returning *`,
    [now, visibilityMs, agentId, now, limit],
  );
  return result.rows;
}

export function findEvent(db: Queryable, eventId: string): Promise<EventRow | undefined> {
  return db<EventRow>('events').where({ id: eventId }).first();
}

/** Marks the event acknowledged; the first ack's time stays (a repeated ack changes nothing). */
export async function markAcked(db: Queryable, eventId: string): Promise<void> {
  await db('events').where({ id: eventId }).whereNull('acked_at').update({ acked_at: db.fn.now(), leased_until: null });
}

/** Deletes up to `batchSize` acknowledged events older than the retention; answers how many. */
export function deleteAckedBatch(db: Database, retentionMs: number, batchSize: number): Promise<number> {
  return db('events')
    .whereIn(
      'id',
      db('events')
        .select('id')
        .whereNotNull('acked_at')
        .andWhereRaw("acked_at < now() - ?::bigint * interval '1 millisecond'", [retentionMs])
        .limit(batchSize),
    )
    .delete();
}
