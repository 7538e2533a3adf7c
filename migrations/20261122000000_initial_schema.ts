import type { Knex } from 'knex';

/**
 * The whole model of the spec in one first migration. Identifiers are prefixed TypeIDs (text);
 * human users are JWT subjects and have no table of their own.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pods', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('pod_members', (t) => {
    t.text('pod_id').notNullable().references('pods.id').onDelete('CASCADE');
    t.text('member_id').notNullable();
    t.text('member_kind').notNullable().checkIn(['human', 'agent']);
    t.text('role').notNullable().checkIn(['owner', 'admin', 'member']);
    t.text('added_by').notNullable();
    t.timestamp('added_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.primary(['pod_id', 'member_id']);
    t.index(['member_id']);
  });

  await knex.schema.createTable('agents', (t) => {
    t.text('id').primary();
    t.text('pod_id').notNullable().references('pods.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('display_name');
    t.text('description');
    t.text('installed_by').notNullable();
    t.timestamp('installed_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.text('desired_state').notNullable().defaultTo('stopped').checkIn(['running', 'stopped']);
    t.text('runtime_state').notNullable().defaultTo('stopped').checkIn(['stopped', 'starting', 'running']);
    t.timestamp('runtime_changed_at', { useTz: true, precision: 3 });
    t.timestamp('last_polled_at', { useTz: true, precision: 3 });
    t.unique(['pod_id', 'name']);
  });

  await knex.schema.createTable('brokers', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('broker_tokens', (t) => {
    t.text('id').primary();
    t.text('broker_id').notNullable().references('brokers.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true, precision: 3 });
  });

  await knex.schema.createTable('runtime_tokens', (t) => {
    t.text('id').primary();
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('token_hash').notNullable().unique();
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true, precision: 3 });
    t.timestamp('last_used_at', { useTz: true, precision: 3 });
    t.index(['agent_id']);
  });

  await knex.schema.createTable('connections', (t) => {
    t.text('id').primary();
    t.text('owner_id').notNullable();
    t.text('kind').notNullable();
    t.text('broker_id').notNullable().references('brokers.id');
    t.text('installation_id').notNullable().unique();
    t.text('external_installation_id').notNullable();
    t.text('status').notNullable().defaultTo('connected').checkIn(['connected', 'disconnected']);
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner_id']);
  });

  await knex.schema.createTable('connection_tools', (t) => {
    t.text('connection_id').notNullable().references('connections.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('access').notNullable().checkIn(['read', 'write']);
    t.primary(['connection_id', 'name']);
  });

  await knex.schema.createTable('grants', (t) => {
    t.text('id').primary();
    t.text('parent_id').references('grants.id');
    t.text('root_id').notNullable();
    t.integer('depth').notNullable().defaultTo(0);
    t.text('connection_id').notNullable().references('connections.id');
    t.text('installation_id').notNullable();
    t.text('broker_id').notNullable().references('brokers.id');
    t.text('target_kind').notNullable().checkIn(['pod', 'seat']);
    t.text('target_id').notNullable();
    t.text('target_pod_id').notNullable().references('pods.id');
    t.text('audience_mode').notNullable().checkIn(['members', 'listed']);
    t.specificType('audience', 'text[]').notNullable().defaultTo('{}');
    t.specificType('tools', 'text[]').notNullable();
    t.text('write_mode').notNullable().checkIn(['read', 'write']);
    t.integer('budget_calls').notNullable();
    t.bigInteger('budget_window_ms').notNullable();
    t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true, precision: 3 });
    t.text('granted_by').notNullable();
    t.text('created_by').notNullable();
    t.index(['parent_id']);
    t.index(['root_id']);
    t.index(['connection_id']);
    t.index(['target_pod_id', 'created_at']);
  });

  await knex.schema.createTable('call_records', (t) => {
    t.text('id').primary();
    t.text('grant_id').notNullable().references('grants.id');
    t.text('tool').notNullable();
    t.text('principal_kind').notNullable().checkIn(['user', 'agent']);
    t.text('principal_id').notNullable();
    t.text('outcome').notNullable().checkIn(['pending', 'denied', 'succeeded', 'failed']);
    t.text('reason').notNullable();
    t.text('approval_id');
    t.text('error_code');
    t.text('args_digest').notNullable();
    t.timestamp('requested_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('completed_at', { useTz: true, precision: 3 });
    t.integer('duration_ms');
    t.index(['grant_id', 'requested_at']);
  });

  await knex.schema.createTable('events', (t) => {
    t.text('id').primary();
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('pod_id').notNullable();
    t.text('type').notNullable();
    t.jsonb('data').notNullable();
    t.timestamp('occurred_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.integer('delivery_count').notNullable().defaultTo(0);
    t.timestamp('leased_until', { useTz: true, precision: 3 });
    t.timestamp('acked_at', { useTz: true, precision: 3 });
  });
  // Polling reads only what is not acknowledged yet, oldest first.
  await knex.raw('create index events_pending_idx on events (agent_id, id) where acked_at is null');
  await knex.raw('create index events_acked_idx on events (acked_at) where acked_at is not null');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'events',
    'call_records',
    'grants',
    'connection_tools',
    'connections',
    'runtime_tokens',
    'broker_tokens',
    'brokers',
    'agents',
    'pod_members',
    'pods',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
