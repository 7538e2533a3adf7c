import type { Knex } from 'knex';

/**
 * Credentials minted per call: an operator binds a GitHub App installation to the one user who
 * may connect it (nobody mints for an installation id they merely typed), a connection names the
 * app it mints through, and a tool may declare the installation permissions its token carries.
 * The app's private key is configuration, never a row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('github_app_installations', (t) => {
    t.text('app').notNullable();
    t.text('external_installation_id').notNullable();
    t.text('owner_id').notNullable();
    t.timestamp('bound_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.primary(['app', 'external_installation_id']);
  });
  await knex.schema.alterTable('connections', (t) => {
    t.text('app');
  });
  await knex.schema.alterTable('connection_tools', (t) => {
    t.jsonb('permissions');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('connection_tools', (t) => t.dropColumn('permissions'));
  await knex.schema.alterTable('connections', (t) => t.dropColumn('app'));
  await knex.schema.dropTable('github_app_installations');
}
