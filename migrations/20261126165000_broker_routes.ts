import type { Knex } from 'knex';

/**
 * Each broker's route map for Envoy external authorization (src/protocols/ext-authz/): how a plain
 * HTTP API's method and path, or an MCP method other than tools/call, become a tool and its
 * arguments. One document per broker, replaced whole by `PUT /api/brokers/:brokerId/routes`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('broker_routes', (t) => {
    t.text('broker_id').primary().references('brokers.id').onDelete('CASCADE');
    t.jsonb('routes').notNullable();
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('broker_routes');
}
