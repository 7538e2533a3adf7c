import type { Knex } from 'knex';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

/** A tree to stamp: a row of the `cache_invalidations` outbox. */
export interface InvalidationRow {
  id: string;
  root_id: string;
}

/** Writes the trees to stamp into the outbox, in the change's transaction. */
export async function insertInvalidations(trx: Knex.Transaction, rootIds: readonly string[]): Promise<InvalidationRow[]> {
  if (rootIds.length === 0) return [];
  return trx('cache_invalidations')
    .insert(rootIds.map((rootId) => ({ root_id: rootId })))
    .returning(['id', 'root_id']);
}

/** The oldest rows written at least `graceMs` ago: what no request confirmed in time. */
export function invalidationsOlderThan(db: Queryable, graceMs: number, limit: number): Promise<InvalidationRow[]> {
  return db('cache_invalidations')
    .whereRaw("created_at < now() - ?::int * interval '1 millisecond'", [graceMs])
    .orderBy('id')
    .limit(limit)
    .select('id', 'root_id');
}

export async function deleteInvalidations(db: Queryable, ids: readonly string[]): Promise<void> {
  await db('cache_invalidations').whereIn('id', ids).delete();
}
