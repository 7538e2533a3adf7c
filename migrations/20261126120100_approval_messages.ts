import type { Knex } from 'knex';

/**
 * The approvals' outbox: one row for each approval requested or decided, written in the
 * transaction that requests or decides it (with the call's record, for a request). The webhooks
 * and the agents' events read it, each once (`webhooks_taken_at`, `agents_taken_at`), so the
 * transaction of a broker check writes nothing of theirs. A row both have taken is deleted.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table approval_messages (
    id bigint generated always as identity primary key,
    type text not null check (type in ('approval.requested', 'approval.decided')),
    pod_id text not null,
    at timestamptz not null,
    webhook_data jsonb not null,
    agent_ids text[] not null default '{}',
    agent_data jsonb,
    webhooks_taken_at timestamptz,
    agents_taken_at timestamptz)`);
  await knex.raw('create index approval_messages_for_webhooks on approval_messages (id) where webhooks_taken_at is null');
  await knex.raw('create index approval_messages_for_agents on approval_messages (id) where agents_taken_at is null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table approval_messages');
}
