import type { Knex } from 'knex';

/**
 * Approval webhooks: a pod's subscriptions (`webhooks`, the signing secret sealed like an
 * approval's arguments) and their outbox (`webhook_deliveries`): one row per message and
 * subscription, written in the transaction of the change it reports, delivered at least once
 * with backoff, given up 24 h after it was written.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.text('id').primary();
    t.text('pod_id').notNullable().references('pods.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.binary('secret_sealed').notNullable();
    t.text('secret_key_id').notNullable();
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.index(['pod_id', 'created_at']);
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    // The message id (`webhook-id`): the same on every attempt, so a receiver can drop repeats.
    t.text('id').primary();
    t.text('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.jsonb('payload').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('leased_until', { useTz: true, precision: 3 });
    t.timestamp('delivered_at', { useTz: true, precision: 3 });
    t.timestamp('failed_at', { useTz: true, precision: 3 });
    t.integer('last_status');
    t.text('last_error');
    t.index(['webhook_id']);
  });
  await knex.raw(
    'create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where delivered_at is null and failed_at is null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhooks');
}
