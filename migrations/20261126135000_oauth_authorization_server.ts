import type { Knex } from 'knex';

/**
 * The OAuth authorization server for MCP hosts (CONTRACT §20):
 * - `oauth_resources`: the resource URIs (a gateway's public `/mcp` URL) an operator registered for
 *   a broker; tokens are issued for those alone.
 * - `oauth_state`: what oidc-provider keeps between requests (registered clients, interactions,
 *   codes, access and refresh tokens, grants, sessions), one row per model and id, so every replica
 *   sees the same state and a code or refresh token is consumed once across all of them.
 * - `oauth_signing_keys`: the token signing keys, each private key sealed with the service's key
 *   ring; a key older than the rotation period is succeeded at start, and kept published until the
 *   tokens it signed have expired.
 * - `grants.oauth_*`: the OAuth client a consent created a child grant for, and who consented.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_resources', (t) => {
    t.text('resource').primary();
    t.text('broker_id').notNullable().references('brokers.id');
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.index(['broker_id']);
  });
  await knex.schema.createTable('oauth_state', (t) => {
    t.text('model').notNullable();
    t.text('id').notNullable();
    t.jsonb('payload').notNullable();
    t.text('grant_id');
    t.text('uid');
    t.text('user_code');
    t.timestamp('expires_at', { useTz: true, precision: 3 });
    t.timestamp('consumed_at', { useTz: true, precision: 3 });
    t.primary(['model', 'id']);
    t.index(['grant_id']);
    t.index(['uid']);
    t.index(['expires_at']);
  });
  await knex.schema.createTable('oauth_signing_keys', (t) => {
    t.text('kid').primary();
    t.text('sealed_jwk').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.alterTable('grants', (t) => {
    t.text('oauth_client_id');
    t.text('oauth_client_name');
    t.text('oauth_consented_by');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('grants', (t) => {
    t.dropColumn('oauth_client_id');
    t.dropColumn('oauth_client_name');
    t.dropColumn('oauth_consented_by');
  });
  await knex.schema.dropTable('oauth_signing_keys');
  await knex.schema.dropTable('oauth_state');
  await knex.schema.dropTable('oauth_resources');
}
