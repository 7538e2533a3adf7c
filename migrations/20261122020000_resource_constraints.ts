import type { Knex } from 'knex';

/**
 * Resource constraints (CONTRACT §8): a grant may name the repositories, refs and paths its tools
 * may touch (null: unrestricted), and a connection's tool may say where in its arguments each of
 * those sits (RFC 6901 pointers; null: the tool names no resource).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('grants', (t) => {
    t.jsonb('resources');
  });
  await knex.schema.alterTable('connection_tools', (t) => {
    t.jsonb('resource');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('connection_tools', (t) => {
    t.dropColumn('resource');
  });
  await knex.schema.alterTable('grants', (t) => {
    t.dropColumn('resources');
  });
}
