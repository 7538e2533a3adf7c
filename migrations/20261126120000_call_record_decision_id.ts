import type { Knex } from 'knex';

/**
 * A record's policy decision gets a column of its own (`decision_id`, the id its decision event
 * was logged under), and `approval_id` names an approval or nothing. Until now one column held
 * both, told apart by the UUID's version nibble (an approval's id carries a UUIDv7, a decision's
 * is a random UUIDv4), so an allowed call on a read-only grant showed a decision's UUID where a
 * reader expects an approval that never happened.
 *
 * The new column goes last. An allowed record moves its 16 bytes from one column to the other; a
 * record that used or asked for an approval now keeps both. Existing rows are converted in place
 * (on a long trail, an update of every allowed record: run it in a quiet hour). The way down puts
 * back what the one column held: the decision of an allowed call made without an approval.
 */
const TABLES = ['call_records', 'held_call_records'];
/** The outcomes of an allowed call (codes of src/trail/repositories/codec.ts): pending, succeeded, failed. */
const ALLOWED = '0, 2, 3';

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.raw('alter table ?? add column decision_id uuid', [table]);
    // A UUIDv4 (the 13th hex digit, the 15th character of its text, is its version) is a decision.
    await knex.raw(`update ?? set decision_id = approval_id, approval_id = null where substr(approval_id::text, 15, 1) = '4'`, [table]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.raw(`update ?? set approval_id = decision_id where approval_id is null and outcome in (${ALLOWED})`, [table]);
    await knex.raw('alter table ?? drop column decision_id', [table]);
  }
}
