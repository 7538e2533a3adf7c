import type { Database } from '../../db/database';
import { outcomeOf, uuidOf } from './codec';

/**
 * The days of the call trail (`call_records`' partitions, `call_records_YYYYMMDD`, each one UTC
 * day of `requested_at`): the SQL the maintenance job and the admin command run, and what the
 * trail weighs. Part of the trail's repository (call-records.ts holds the rows' SQL, holds.ts the
 * holds').
 */

export interface TrailDay {
  /** `YYYY-MM-DD`, the UTC day the partition holds. */
  day: string;
  table: string;
  bytes: number;
}

const DAY_TABLE = /^call_records_(\d{4})(\d{2})(\d{2})$/;
/** Waiting longer than this for a lock on the trail would stall checks: give up, retry next tick. */
const LOCK_TIMEOUT = '1s';

/** The day a partition's name holds (`call_records_YYYYMMDD`), or undefined for any other table. */
export function dayOfTable(table: string): string | undefined {
  const match = DAY_TABLE.exec(table);
  return match ? `${match[1]}-${match[2]}-${match[3]}` : undefined;
}

export function dayTable(day: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new RangeError(`not a day: ${day}`);
  return `call_records_${day.replaceAll('-', '')}`;
}

export function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

/** Every day partition (oldest first) with its size, and the size of the default partition. */
export async function trailDays(db: Database): Promise<{ days: TrailDay[]; defaultBytes: number; heldBytes: number }> {
  const { rows } = await db.raw<{ rows: Array<{ name: string; bytes: string }> }>(
    `select c.relname as name, pg_total_relation_size(c.oid) as bytes
       from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'call_records'::regclass`,
  );
  const days: TrailDay[] = [];
  let defaultBytes = 0;
  for (const row of rows) {
    const day = dayOfTable(row.name);
    if (day) days.push({ day, table: row.name, bytes: Number(row.bytes) });
    else defaultBytes += Number(row.bytes);
  }
  const held = await db.raw<{ rows: Array<{ bytes: string }> }>(`select pg_total_relation_size('held_call_records') as bytes`);
  return { days: days.sort((a, b) => a.day.localeCompare(b.day)), defaultBytes, heldBytes: Number(held.rows[0]?.bytes ?? 0) };
}

/**
 * Makes a day's partition. Rows of that day already in the default partition (the clock ran ahead
 * of the days made) move into it in the same transaction, so attaching it never fails on them.
 */
export async function createTrailDay(db: Database, day: string): Promise<void> {
  const table = dayTable(day);
  const range = [`${day} 00:00:00+00`, `${nextDay(day)} 00:00:00+00`];
  await db.transaction(async (trx) => {
    await trx.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    if ((await trx.raw<{ rows: unknown[] }>('select 1 from pg_class where relname = ?', [table])).rows.length > 0) return;
    // No record of that day may reach the default partition between the move and the attach.
    await trx.raw('lock table call_records_default in share row exclusive mode');
    await trx.raw('create table ?? (like call_records including defaults including constraints)', [table]);
    const stray = 'from call_records_default where requested_at >= ?::timestamptz and requested_at < ?::timestamptz';
    await trx.raw(`insert into ?? select * ${stray}`, [table, ...range]);
    await trx.raw(`delete ${stray}`, range);
    await trx.raw(`alter table call_records attach partition ?? for values from ('${range[0]}') to ('${range[1]}')`, [table]);
  });
}

/**
 * Drops a day whole: O(1), no dead rows, no vacuum. The rows of held grants are copied aside into
 * `held_call_records` first, in the same transaction, so a held row is never in both or neither.
 */
export async function dropTrailDay(db: Database, day: string, heldGrantIds: readonly string[]): Promise<void> {
  const table = dayTable(day);
  await db.transaction(async (trx) => {
    await trx.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    if (heldGrantIds.length > 0) {
      await trx.raw(`insert into held_call_records select * from ?? where grant_id = any(?::uuid[]) on conflict (id) do nothing`, [
        table,
        heldGrantIds.map((id) => uuidOf('grant', id)),
      ]);
    }
    await trx.raw('drop table ??', [table]);
  });
}

/**
 * Keeps the trail's lookup by leaf fast where autovacuum is behind or off: summarizes the pages
 * written since the last summary in the BRIN indexes of the days still written to (today's and
 * yesterday's by the database's clock: checks, and outcomes of yesterday's calls) and of the held
 * records, and analyzes today's partition once a tenth of it is new (autovacuum's own threshold).
 * A BRIN index reads every page it has no summary of, and a day never analyzed is planned as a
 * scan of all its rows: either would make a proof read all of today's records. One replica at a
 * time; a lock not granted at once (autovacuum on the day) skips the turn. The ranges summarized.
 */
export async function keepLeafLookupCurrent(db: Database): Promise<number> {
  return db.transaction(async (trx) => {
    await trx.raw(`set local lock_timeout = '100ms'`);
    const { rows: locked } = await trx.raw<{ rows: Array<{ ok: boolean }> }>(
      `select pg_try_advisory_xact_lock(hashtext('call trail: leaf lookup')) as ok`,
    );
    if (!locked[0]?.ok) return 0;
    const day = (daysBack: number) => `to_regclass('call_records_' || to_char((now() at time zone 'UTC')::date - ${daysBack}, 'YYYYMMDD'))`;
    const { rows } = await trx.raw<{ rows: Array<{ ranges: string }> }>(
      `select coalesce(sum(brin_summarize_new_values(x.indexrelid)), 0) as ranges
         from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am a on a.oid = i.relam and a.amname = 'brin'
        where x.indrelid = any(array[${day(0)}, ${day(1)}, 'held_call_records'::regclass])`,
    );
    const { rows: stale } = await trx.raw<{ rows: Array<{ name: string }> }>(
      `select t.relname as name from pg_stat_user_tables t join pg_class c on c.oid = t.relid
        where t.relid = ${day(0)} and t.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)`,
    );
    if (stale[0]) await trx.raw('analyze ??', [stale[0].name]);
    return Number(rows[0]?.ranges ?? 0);
  });
}

/** Records kept (days, default partition and held rows) and their bytes on disk, indexes included. */
export async function trailFootprint(db: Database): Promise<{ records: number; bytes: number; bytesPerRecord: number }> {
  const { rows } = await db.raw<{ rows: Array<{ records: string; bytes: string }> }>(
    `select (select count(*) from call_records) + (select count(*) from held_call_records) as records,
            (select sum(pg_total_relation_size(relid)) from pg_partition_tree('call_records'))
              + pg_total_relation_size('held_call_records') as bytes`,
  );
  const records = Number(rows[0]!.records);
  const bytes = Number(rows[0]!.bytes);
  return { records, bytes, bytesPerRecord: records > 0 ? Math.round(bytes / records) : 0 };
}

/** Bytes of the trail by kind of relation (heap, its TOAST, each access method's indexes): where a record's bytes go. */
export async function trailBreakdown(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.raw<{ rows: Array<{ part: string; bytes: string }> }>(
    `select 'heap' as part, sum(pg_relation_size(relid)) as bytes from pg_partition_tree('call_records')
     union all
     select 'index ' || am.amname, sum(pg_relation_size(i.indexrelid))
       from pg_partition_tree('call_records') t join pg_index i on i.indrelid = t.relid
       join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam group by am.amname`,
  );
  return Object.fromEntries(rows.map((row) => [row.part, Number(row.bytes)]));
}

/** How many records the trail keeps of each outcome (the bench checks every answer was recorded). */
export async function trailRecordsByOutcome(db: Database): Promise<Record<string, number>> {
  const rows: Array<{ outcome: number; n: string }> = await db('call_records').select('outcome').count({ n: '*' }).groupBy('outcome');
  return Object.fromEntries(rows.map((row) => [outcomeOf(row.outcome), Number(row.n)]));
}

/**
 * The leaves a drop of this day takes with it (its records' and their outcomes', held grants'
 * excepted), in the 256-leaf blocks it does not take whole: the blocks whose lower hashes must be
 * kept first. A block taken whole and complete needs none (its level-8 hash stands for it).
 */
export async function leavesOfDayInPartBlocks(db: Database, day: string, heldGrantIds: readonly string[]): Promise<number[]> {
  const { rows } = await db.raw<{ rows: Array<{ leaf: string }> }>(
    `with dropped as (
       select leaf from (select leaf_index as leaf, grant_id from ?? union all select outcome_leaf_index, grant_id from ??) x
        where leaf is not null and not (grant_id = any(?::uuid[]))),
     blocks as (select leaf >> 8 as block, count(*) as n from dropped group by 1)
     select d.leaf from dropped d join blocks b on b.block = d.leaf >> 8, trail_tree t
      where b.n < 256 or ((b.block + 1) << 8) > t.size order by d.leaf`,
    [dayTable(day), dayTable(day), heldGrantIds.map((id) => uuidOf('grant', id))],
  );
  return rows.map((row) => Number(row.leaf));
}
