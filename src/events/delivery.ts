import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { deleteAckedBatch, leaseDeliverable, type EventRow } from './repository';

type Queryable = Database | Knex.Transaction;

/** Delivery as the runtime surface uses it; events/repository.ts holds the SQL. */
export { findEvent, markAcked, type EventRow } from './repository';

/**
 * Leases up to `limit` of the agent's deliverable events (never acked, and not under a live lease
 * at `nowMs`) for `visibilityMs`, oldest first, counting the delivery. Two concurrent polls of the
 * same agent split the pending events rather than both taking them. Time is the service's clock,
 * so a lease ends when the clock says, in tests too.
 */
export async function leaseEvents(db: Queryable, agentId: string, limit: number, visibilityMs: number, nowMs: number): Promise<EventRow[]> {
  const rows = await leaseDeliverable(db, agentId, limit, visibilityMs, new Date(nowMs));
  // RETURNING follows no order; ids are time-sortable (UUIDv7 TypeIDs), so sorting by id is by age.
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Deletes acknowledged events older than the retention, in batches so a large backlog never holds
 * a long lock. Unacknowledged events stay until acked or until their agent is uninstalled.
 */
export async function deleteAckedEvents(db: Database, retentionMs: number, batchSize = 5000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const count = await deleteAckedBatch(db, retentionMs, batchSize);
    deleted += count;
    if (count < batchSize) return deleted;
  }
}
