import type { Knex } from 'knex';

/**
 * The invalidation outbox: a change that can make the broker's cached facts wrong writes the
 * trees it affects here, in its own transaction. The request stamps them in Redis before it
 * answers 2xx; a relay on every replica stamps whatever a request could not (Redis cut off, the
 * process killed between commit and stamp), so nothing committed is ever left unannounced.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('cache_invalidations', (t) => {
    t.bigIncrements('id').primary();
    t.text('root_id').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('cache_invalidations');
}
