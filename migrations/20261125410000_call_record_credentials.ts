import type { Knex } from 'knex';

/**
 * Credential lineage: a call that received a minted token keeps the first 8 bytes of the token's
 * SHA-256 and when the token expires (never the token), so a leaked token leads to every call
 * that received it. Both nullable: most calls ask for no credential. No index: the look-up runs
 * within one grant's trail, which the (grant_id, requested_at) index already narrows. The held
 * copy of the trail gets the same columns, in the same order, so a hold copies rows as they are.
 */
const TABLES = ['call_records', 'held_call_records'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.binary('credential_fingerprint');
      t.timestamp('credential_expires_at', { useTz: true, precision: 3 });
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('credential_expires_at');
      t.dropColumn('credential_fingerprint');
    });
  }
}
