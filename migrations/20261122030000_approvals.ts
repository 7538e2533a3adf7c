import type { Knex } from 'knex';

/**
 * Approvals bound to one call (CONTRACT §9): `approve` joins the write modes, a call can wait for
 * an approval, and an approval names exactly the grant, tool, principal and argument digest it
 * allows, once.
 */
async function replaceCheck(knex: Knex, table: string, column: string, values: readonly string[]): Promise<void> {
  const { rows } = await knex.raw<{ rows: Array<{ conname: string }> }>(
    `select conname from pg_constraint where conrelid = ?::regclass and contype = 'c' and pg_get_constraintdef(oid) like ?`,
    [table, `%${column}%`],
  );
  for (const { conname } of rows) await knex.raw('alter table ?? drop constraint ??', [table, conname]);
  // DDL takes no bound parameters: the values are this file's own constants, checked to be plain words.
  if (!values.every((value) => /^[a-z_]+$/.test(value))) throw new Error('check values must be plain words');
  const list = values.map((value) => `'${value}'`).join(', ');
  await knex.raw(`alter table ?? add constraint ?? check (?? in (${list}))`, [table, `${table}_${column}_check`, column]);
}

export async function up(knex: Knex): Promise<void> {
  await replaceCheck(knex, 'grants', 'write_mode', ['read', 'approve', 'write']);
  await replaceCheck(knex, 'call_records', 'outcome', ['pending', 'denied', 'succeeded', 'failed', 'awaiting_approval']);
  await knex.schema.createTable('approvals', (t) => {
    t.text('id').primary();
    t.text('grant_id').notNullable().references('grants.id');
    t.text('call_id').notNullable();
    t.text('tool').notNullable();
    t.text('args_digest').notNullable();
    t.text('principal_kind').notNullable().checkIn(['user', 'agent']);
    t.text('principal_id').notNullable();
    // `expired` is never stored: it is `pending` or `approved` past expires_at, by the clock.
    t.text('state').notNullable().defaultTo('pending').checkIn(['pending', 'approved', 'denied', 'used']);
    t.timestamp('requested_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable();
    t.text('decided_by');
    t.timestamp('decided_at', { useTz: true, precision: 3 });
    t.text('note');
    t.text('used_by_call_id');
    t.index(['grant_id']);
    t.index(['state', 'requested_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('approvals');
  await knex('call_records').where({ outcome: 'awaiting_approval' }).update({ outcome: 'denied' });
  await replaceCheck(knex, 'call_records', 'outcome', ['pending', 'denied', 'succeeded', 'failed']);
  await knex('grants').where({ write_mode: 'approve' }).update({ write_mode: 'read' });
  await replaceCheck(knex, 'grants', 'write_mode', ['read', 'write']);
}
