import type { Knex } from 'knex';

/**
 * A pending approval keeps its call's arguments, so a human reads what they approve: sealed with
 * AES-256-GCM (`args_sealed`: nonce, tag and ciphertext; `args_key_id`: which key sealed them),
 * erased (set NULL) in the statement that moves the approval out of `pending`. Arguments past
 * the size kept are not kept at all: `args_too_large`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('approvals', (t) => {
    t.binary('args_sealed');
    t.text('args_key_id');
    t.boolean('args_too_large').notNullable().defaultTo(false);
  });
  // What the expiry sweep looks for: pending rows that still hold arguments, by expiry.
  await knex.raw('create index approvals_sealed_pending_idx on approvals (expires_at) where args_sealed is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists approvals_sealed_pending_idx');
  await knex.schema.alterTable('approvals', (t) => {
    t.dropColumn('args_sealed');
    t.dropColumn('args_key_id');
    t.dropColumn('args_too_large');
  });
}
