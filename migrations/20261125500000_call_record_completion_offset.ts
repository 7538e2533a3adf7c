import type { Knex } from 'knex';

/**
 * A record's completion as milliseconds after its check (`completed_after_ms`, 4 bytes), not as a
 * second timestamp (8): a record with its outcome then fits in 136 bytes on the page instead of
 * 144 (Postgres aligns each row to 8 bytes, and the outcome's row was 3 bytes past 136). The
 * outcome decision refuses reports more than 24 days after the check (policies/broker/outcome.rego),
 * well inside the integer's 24.8 days.
 *
 * Existing rows are converted in place; the new column goes last, which costs no byte: it follows
 * the digest, and a row is padded to 8 bytes either way. The way down converts back.
 */
const TABLES = ['call_records', 'held_call_records'];
// A completion later than the integer holds cannot come from the service (the policy refuses it first).
const OFFSET = `round(extract(epoch from (completed_at - requested_at)) * 1000)::integer`;

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.raw('alter table ?? add column completed_after_ms integer', [table]);
    await knex.raw(`update ?? set completed_after_ms = ${OFFSET} where completed_at is not null`, [table]);
    await knex.raw('alter table ?? drop column completed_at', [table]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.raw('alter table ?? add column completed_at timestamptz(3)', [table]);
    await knex.raw(
      `update ?? set completed_at = requested_at + completed_after_ms * interval '1 millisecond' where completed_after_ms is not null`,
      [table],
    );
    await knex.raw('alter table ?? drop column completed_after_ms', [table]);
  }
}
