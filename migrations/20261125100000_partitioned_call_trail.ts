import type { Knex } from 'knex';
import { TypeID } from 'typeid-js';

/**
 * The call trail as a table partitioned by day on `requested_at`, in binary form: ids as UUIDs,
 * the argument digest as 32 bytes, the outcome as a small code, each (tool, principal) pair stored
 * once in call_record_shapes and named by its number, one B-tree (grant,
 * time) for the listing and the budget rebuild, one BRIN (time) for finding a call by its id (an
 * id carries its record's time). Old days are dropped whole, never deleted row by row; a held
 * grant tree's rows are copied aside into `held_call_records` first (`call_record_holds`).
 *
 * Every existing row is copied over (ids and digests converted); the way down converts back.
 * The service creates the partitions of the coming days itself (grants/trail-maintenance.ts).
 */

const OUTCOMES = ['pending', 'denied', 'succeeded', 'failed', 'awaiting_approval'];
const KINDS = ['user', 'agent'];
const BATCH = 5000;
const GRANT_KEY = `(('x' || right(grant_id::text, 12))::bit(48)::bigint)`;

// Fixed-width columns first, widest first, so no byte is lost to alignment. `shape` names the
// (tool, principal) pair in call_record_shapes; `reason` is null when it is the outcome's usual one.
const COLUMNS = `
  requested_at timestamptz(3) not null,
  completed_at timestamptz(3),
  duration_ms integer,
  shape integer not null,
  outcome smallint not null check (outcome between 0 and 4),
  id uuid not null,
  grant_id uuid not null,
  approval_id uuid,
  args_digest bytea not null check (octet_length(args_digest) = 32),
  reason text,
  error_code text`;

const usualReason = (outcome: string) => (outcome === 'denied' ? null : outcome === 'awaiting_approval' ? 'approval_required' : 'allowed');

/** The shape code of each row's (tool, principal), made when new. */
async function shapesOf(knex: Knex, rows: OldRow[]): Promise<number[]> {
  const key = (r: { tool: string; principal_kind: number; principal_id: string }) =>
    JSON.stringify([r.tool, r.principal_kind, r.principal_id]);
  const distinct = new Map(rows.map((r) => [key({ ...r, principal_kind: KINDS.indexOf(r.principal_kind) }), r]));
  const list = [...distinct.values()];
  const { rows: made } = await knex.raw<{ rows: Array<{ code: number; tool: string; principal_kind: number; principal_id: string }> }>(
    `insert into call_record_shapes (tool, principal_kind, principal_id) select * from unnest(?::text[], ?::smallint[], ?::text[])
     on conflict (tool, principal_kind, principal_id) do update set tool = excluded.tool returning *`,
    [
      list.map((r) => r.tool),
      list.map((r) => KINDS.indexOf(r.principal_kind)),
      list.map((r) => r.principal_id),
    ] as unknown as Knex.RawBinding[],
  );
  const codes = new Map(made.map((m) => [key(m), m.code]));
  return rows.map((r) => codes.get(key({ ...r, principal_kind: KINDS.indexOf(r.principal_kind) }))!);
}

interface OldRow {
  id: string;
  grant_id: string;
  tool: string;
  principal_kind: string;
  principal_id: string;
  outcome: string;
  reason: string;
  approval_id: string | null;
  error_code: string | null;
  args_digest: string;
  requested_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
}

const hexOfId = (id: string) => Buffer.from(TypeID.fromString(id).toUUIDBytes()).toString('hex');
const idOfUuid = (prefix: string, uuid: string) => TypeID.fromUUIDBytes(prefix, Buffer.from(uuid.replaceAll('-', ''), 'hex')).toString();
// An approval's id, or (a call allowed without one) the UUIDv4 of the policy decision that allowed it.
const approvalHex = (id: string) => (id.startsWith('apr_') ? hexOfId(id) : id.replaceAll('-', ''));

function dayName(day: string): string {
  return `call_records_${day.replaceAll('-', '')}`;
}

async function createDay(knex: Knex, day: string): Promise<void> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`not a day: ${day}`);
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  await knex.raw(
    `create table if not exists ?? partition of call_records for values from ('${day} 00:00:00+00') to ('${next} 00:00:00+00')`,
    [dayName(day)],
  );
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table call_records rename to call_records_unpartitioned');
  await knex.raw(`create table call_record_shapes (
    code integer generated always as identity primary key,
    tool text not null,
    principal_kind smallint not null check (principal_kind between 0 and 1),
    principal_id text not null,
    unique (tool, principal_kind, principal_id))`);
  await knex.raw(`create table call_records (${COLUMNS}) partition by range (requested_at)`);
  // The grant as 48 of its UUID's random bits (a bigint), not its 16 bytes: an entry of the one
  // B-tree every record has is 8 bytes smaller. Queries name the grant both ways (the key finds,
  // the UUID confirms); src/grants/repositories/call-records.ts spells the key the same.
  await knex.raw(`create index call_records_grant_time_idx on call_records (${GRANT_KEY}, requested_at)`);
  await knex.raw(
    'create index call_records_time_brin on call_records using brin (requested_at) with (pages_per_range = 16, autosummarize = on)',
  );
  // Rows whose day has no partition (a clock ahead of the partitions made) land here, not in an error.
  await knex.raw('create table call_records_default partition of call_records default');
  const { rows: days } = await knex.raw<{ rows: Array<{ day: string }> }>(
    `select distinct to_char(requested_at at time zone 'UTC', 'YYYY-MM-DD') as day from call_records_unpartitioned
     union select to_char((now() at time zone 'UTC')::date + n, 'YYYY-MM-DD') from generate_series(0, 2) as n`,
  );
  for (const { day } of days) await createDay(knex, day);

  let after = '';
  for (;;) {
    const rows: OldRow[] = await knex('call_records_unpartitioned').where('id', '>', after).orderBy('id').limit(BATCH);
    if (rows.length === 0) break;
    const shapes = await shapesOf(knex, rows);
    await knex.raw(
      `insert into call_records (id, grant_id, shape, outcome, reason, approval_id, error_code, args_digest, requested_at,
                                 completed_at, duration_ms)
       select * from unnest(?::uuid[], ?::uuid[], ?::integer[], ?::smallint[], ?::text[], ?::uuid[], ?::text[], ?::bytea[],
                            ?::timestamptz[], ?::timestamptz[], ?::integer[])`,
      [
        rows.map((r) => hexOfId(r.id)),
        rows.map((r) => hexOfId(r.grant_id)),
        shapes,
        rows.map((r) => OUTCOMES.indexOf(r.outcome)),
        rows.map((r) => (r.reason === usualReason(r.outcome) ? null : r.reason)),
        rows.map((r) => (r.approval_id ? approvalHex(r.approval_id) : null)),
        rows.map((r) => r.error_code),
        rows.map((r) => Buffer.from(r.args_digest.slice('sha256:'.length), 'hex')),
        rows.map((r) => r.requested_at),
        rows.map((r) => r.completed_at),
        rows.map((r) => r.duration_ms),
      ] as unknown as Knex.RawBinding[],
    );
    after = rows.at(-1)!.id;
  }
  const [{ before }] = (await knex('call_records_unpartitioned').count({ before: '*' })) as [{ before: string }];
  const [{ now }] = (await knex('call_records').count({ now: '*' })) as [{ now: string }];
  if (before !== now) throw new Error(`call_records conversion copied ${now} of ${before} rows`);
  await knex.raw('drop table call_records_unpartitioned');

  await knex.raw(`create table held_call_records (${COLUMNS})`);
  await knex.raw('create index held_call_records_grant_time_idx on held_call_records (grant_id, requested_at)');
  await knex.raw('create unique index held_call_records_id_idx on held_call_records (id)');
  await knex.schema.createTable('call_record_holds', (t) => {
    t.text('root_grant_id').primary().references('grants.id');
    t.timestamp('held_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  });
}

interface NewRow {
  id: string;
  grant_id: string;
  tool: string;
  principal_kind: number;
  principal_id: string;
  outcome: number;
  reason: string | null;
  approval_id: string | null;
  error_code: string | null;
  args_digest: Buffer;
  requested_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('call_records_unpartitioned', (t) => {
    t.text('id').primary();
    t.text('grant_id').notNullable().references('grants.id');
    t.text('tool').notNullable();
    t.text('principal_kind').notNullable().checkIn(KINDS);
    t.text('principal_id').notNullable();
    t.text('outcome').notNullable().checkIn(OUTCOMES);
    t.text('reason').notNullable();
    t.text('approval_id');
    t.text('error_code');
    t.text('args_digest').notNullable();
    t.timestamp('requested_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('completed_at', { useTz: true, precision: 3 });
    t.integer('duration_ms');
  });
  for (const table of ['call_records', 'held_call_records']) {
    let after: [Date, string] | null = null;
    for (;;) {
      const query = knex<NewRow>(`${table} as r`)
        .join('call_record_shapes as s', 's.code', 'r.shape')
        .select('r.*', 's.tool', 's.principal_kind', 's.principal_id')
        .orderBy(['r.requested_at', 'r.id'])
        .limit(BATCH);
      if (after) query.whereRaw('(r.requested_at, r.id) > (?, ?::uuid)', after);
      const rows: NewRow[] = await query;
      if (rows.length === 0) break;
      await knex('call_records_unpartitioned').insert(
        rows.map((r) => ({
          id: idOfUuid('call', r.id),
          grant_id: idOfUuid('grt', r.grant_id),
          tool: r.tool,
          principal_kind: KINDS[r.principal_kind],
          principal_id: r.principal_id,
          outcome: OUTCOMES[r.outcome],
          reason: r.reason ?? usualReason(OUTCOMES[r.outcome]!),
          approval_id: r.approval_id && (r.approval_id[14] === '4' ? r.approval_id : idOfUuid('apr', r.approval_id)),
          error_code: r.error_code,
          args_digest: `sha256:${r.args_digest.toString('hex')}`,
          requested_at: r.requested_at,
          completed_at: r.completed_at,
          duration_ms: r.duration_ms,
        })),
      );
      const last: NewRow = rows.at(-1)!;
      after = [last.requested_at, last.id];
    }
  }
  await knex.schema.dropTable('call_record_holds');
  await knex.schema.dropTable('held_call_records');
  await knex.schema.dropTable('call_records');
  await knex.schema.dropTable('call_record_shapes');
  await knex.raw('alter table call_records_unpartitioned rename to call_records');
  await knex.raw('alter index call_records_unpartitioned_pkey rename to call_records_pkey');
  await knex.raw('create index call_records_grant_id_requested_at_index on call_records (grant_id, requested_at)');
}
