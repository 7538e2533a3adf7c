import type { Knex } from 'knex';

/**
 * A check that needs an approval first looks for an open one (pending or approved) of the very
 * same call: the grant, then the arguments' digest (src/approvals/repository.ts findOpenApproval).
 * Only open approvals are indexed: those a call can still come back for.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("create index approvals_open_by_call_idx on approvals (grant_id, args_digest) where state in ('pending', 'approved')");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists approvals_open_by_call_idx');
}
