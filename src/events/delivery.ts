import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { EventType } from './outbox';

type Queryable = Database | Knex.Transaction;

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

/**
 * Leases up to `limit` of the agent's deliverable events (never acked, and not under a live lease
 * at `nowMs`) for `visibilityMs`, oldest first, counting the delivery. One statement: SKIP LOCKED
 * lets two concurrent polls of the same agent split the pending events instead of both taking
 * them, and the lease (not the row lock) keeps them apart once the statement commits. Time is the
 * service's clock, so a lease ends when the clock says, in tests too.
 */
export async function leaseEvents(db: Queryable, agentId: string, limit: number, visibilityMs: number, nowMs: number): Promise<EventRow[]> {
  const now = new Date(nowMs);
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
  // RETURNING follows no order; ids are time-sortable (UUIDv7 TypeIDs), so sorting by id is by age.
  return result.rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function findEvent(db: Queryable, eventId: string): Promise<EventRow | undefined> {
  return db<EventRow>('events').where({ id: eventId }).first();
}

/** Marks the event acknowledged; the first ack's time stays (a repeated ack changes nothing). */
export async function markAcked(db: Queryable, eventId: string): Promise<void> {
  await db('events').where({ id: eventId }).whereNull('acked_at').update({ acked_at: db.fn.now(), leased_until: null });
}

/**
 * Deletes acknowledged events older than the retention, in batches so a large backlog never holds
 * a long lock. Unacknowledged events stay until acked or until their agent is uninstalled.
 */
export async function deleteAckedEvents(db: Database, retentionMs: number, batchSize = 5000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const count = await db('events')
      .whereIn(
        'id',
        db('events')
          .select('id')
          .whereNotNull('acked_at')
          .andWhereRaw("acked_at < now() - ?::bigint * interval '1 millisecond'", [retentionMs])
          .limit(batchSize),
      )
      .delete();
    deleted += count;
    if (count < batchSize) return deleted;
  }
}
