import type { Knex } from 'knex';

/**
 * The trail searched for denials: a grant's denied calls by time, in a partial B-tree of its own
 * (every day partition gets it, as the partitioned table's index). Denials are the few calls an
 * investigation starts from; in a busy grant's records they are too sparse to find by walking its
 * time index, and too few to cost much: the index holds only them. Other filters (tool, principal,
 * reason) narrow what either index walks in time order.
 */
const GRANT_KEY = `(('x' || right(grant_id::text, 12))::bit(48)::bigint)`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create index call_records_denied_idx on call_records (${GRANT_KEY}, requested_at) where outcome = 1`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists call_records_denied_idx');
}
