import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import type { BudgetLevelRow, ListPosition } from '../repository';

type Queryable = Database | Knex.Transaction;

/**
 * The call trail, `call_records`: one row per broker check, written before its answer leaves,
 * completed once by the call's outcome. Owned here; the broker writes it through grants/trail.ts.
 */

export interface CallRecordRow {
  id: string;
  grant_id: string;
  tool: string;
  principal_kind: 'user' | 'agent';
  principal_id: string;
  outcome: 'pending' | 'denied' | 'succeeded' | 'failed' | 'awaiting_approval';
  reason: string;
  approval_id: string | null;
  error_code: string | null;
  args_digest: string;
  requested_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
  /** Joined in call trail listings: who approved the call, when an approval allowed it. */
  approval_decided_by?: string | null;
}

type OptionalColumns = 'approval_id' | 'error_code' | 'completed_at' | 'duration_ms';

/** A row of call_records as a check writes it. */
export type NewCallRecord = Omit<CallRecordRow, OptionalColumns | 'approval_decided_by'> & Partial<Pick<CallRecordRow, OptionalColumns>>;

/** Every column a check may write, in the order of INSERT_ROWS's arrays. */
const COLUMNS = [
  'id',
  'grant_id',
  'tool',
  'principal_kind',
  'principal_id',
  'outcome',
  'reason',
  'approval_id',
  'error_code',
  'args_digest',
  'requested_at',
  'completed_at',
  'duration_ms',
] as const satisfies ReadonlyArray<keyof NewCallRecord>;

/**
 * One statement for any number of rows: a column of values per array, zipped by unnest. Its text
 * never changes, so it is a named prepared statement: each connection parses and plans it once,
 * and a batch sends only Bind and Execute (a multi-row VALUES list would be rebuilt, and an
 * unnamed statement parsed and planned again, for every batch: the trail is one write per check).
 */
const INSERT_ROWS = {
  name: 'call_records_insert_v1',
  text: `insert into call_records (${COLUMNS.join(', ')})
select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                     $9::text[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::integer[])`,
};

/** The one query method a batch needs of a pooled node-postgres client. */
interface PgConnection {
  query(statement: { name: string; text: string; values: unknown[] }): Promise<unknown>;
}

/** Any number of records in one statement (the group commit of concurrent checks). */
export async function insertCallRecords(db: Database, rows: readonly NewCallRecord[]): Promise<void> {
  // One array per column; node-postgres sends each as a Postgres array (nulls included).
  const values = COLUMNS.map((column) => rows.map((row) => row[column] ?? null));
  // Straight to a connection of knex's pool (same pool, timeouts and broken-connection checks):
  // knex cannot send a named statement, and its query builder was most of this write's cost.
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    await connection.query({ ...INSERT_ROWS, values });
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/** One record in a unit of work of its own: it commits with what else the unit changes, or not at all. */
export async function insertCallRecord(trx: Knex.Transaction, row: NewCallRecord): Promise<void> {
  await trx('call_records').insert(row);
}

/** The call's outcome so far and the broker of its grant, for the outcome decision. */
export function findCallForOutcome(db: Queryable, callId: string): Promise<{ outcome: string; broker_id: string } | undefined> {
  return db('call_records as c')
    .join('grants as g', 'g.id', 'c.grant_id')
    .where('c.id', callId)
    .first<{ outcome: string; broker_id: string } | undefined>('c.outcome', 'g.broker_id');
}

/** Completes a pending record, once: undefined when it was no longer pending (a second report). */
export async function completeCallRecord(
  db: Database,
  callId: string,
  report: { outcome: 'succeeded' | 'failed'; durationMs?: number; errorCode?: string },
): Promise<CallRecordRow | undefined> {
  const [updated] = await db<CallRecordRow>('call_records')
    .where({ id: callId, outcome: 'pending' })
    .update({
      outcome: report.outcome,
      completed_at: db.fn.now(),
      duration_ms: report.durationMs ?? null,
      error_code: report.errorCode ?? null,
    } as never)
    .returning('*');
  return updated as CallRecordRow | undefined;
}

export function callRecordsAfter(db: Queryable, grantId: string, after: ListPosition | null, size: number): Promise<CallRecordRow[]> {
  const query = db<CallRecordRow>('call_records as r')
    .leftJoin('approvals as a', 'a.id', 'r.approval_id')
    .where({ 'r.grant_id': grantId })
    .select('r.*', 'a.decided_by as approval_decided_by');
  if (after) query.whereRaw('(r.requested_at, r.id) < (?, ?)', [after.at, after.id]);
  return query
    .orderBy([
      { column: 'r.requested_at', order: 'desc' },
      { column: 'r.id', order: 'desc' },
    ])
    .limit(size);
}

// Every allowed call of the tree counts at its own grant and every ancestor (closure), within
// that level's window: the newest `calls` of them for an exact window (older ones can no longer
// decide anything), per bucket for a bucketed one.
const WINDOW_CALLS_SQL = `
with recursive tree as (
  select * from json_to_recordset(?::json) as t(id text, parent_id text, calls int, window_ms bigint, bucket_ms bigint)
), closure as (
  select id as grant_id, id as level_id from tree
  union all
  select c.grant_id, t.parent_id from closure c join tree t on t.id = c.level_id where t.parent_id is not null
), counted as (
  select cl.level_id, l.calls, l.bucket_ms,
         (extract(epoch from r.requested_at) * 1000)::bigint + ?::bigint as at_ms
    from closure cl
    join tree l on l.id = cl.level_id
    -- One index range scan (grant_id, requested_at) per level; OFFSET 0 keeps the planner from
    -- flattening it into a merge join that walks the index of every grant's calls.
    cross join lateral (
      select r.requested_at from call_records r
       where r.grant_id = cl.grant_id
         and r.requested_at > now() - (l.window_ms + l.bucket_ms + ?::bigint) * interval '1 millisecond'
         and r.outcome in ('pending', 'succeeded', 'failed')
      offset 0
    ) r
), newest as (
  select level_id, at_ms, calls, row_number() over (partition by level_id order by at_ms desc) as rank
    from counted where bucket_ms = 0
)
select level_id, at_ms, 1 as n from newest where rank <= calls
union all
select level_id, at_ms - at_ms % bucket_ms, count(*) from counted where bucket_ms > 0 group by 1, 2`;

/**
 * The allowed calls that count in each level's window now, each at its `requested_at` plus
 * `marginMs`: one by one (the newest `calls`) for an exact window, counted per bucket otherwise.
 */
export async function callsInWindows(
  db: Queryable,
  levels: ReadonlyArray<BudgetLevelRow & { bucketMs: number }>,
  marginMs: number,
): Promise<Array<{ levelId: string; atMs: number; n: number }>> {
  const tree = levels.map((l) => ({ id: l.id, parent_id: l.parentId, calls: l.calls, window_ms: l.windowMs, bucket_ms: l.bucketMs }));
  const result = await db.raw<{ rows: Array<{ level_id: string; at_ms: string; n: string }> }>(WINDOW_CALLS_SQL, [
    JSON.stringify(tree),
    marginMs,
    marginMs,
  ]);
  return result.rows.map((row) => ({ levelId: row.level_id, atMs: Number(row.at_ms), n: Number(row.n) }));
}

/**
 * What a tree's session is rebuilt from after Redis lost it: its allowed calls per tool since
 * `sinceMs`, counted per millisecond, and whether any was made since `labelsSinceMs`.
 */
export async function treeSessionCalls(
  db: Queryable,
  grantIds: readonly string[],
  sinceMs: number,
  labelsSinceMs: number,
): Promise<{ calls: Array<{ tool: string; atMs: number; n: number }>; anySince: boolean }> {
  const allowed = ['pending', 'succeeded', 'failed'];
  const [rows, any] = await Promise.all([
    db('call_records')
      .whereIn('grant_id', grantIds)
      .whereIn('outcome', allowed)
      .where('requested_at', '>=', new Date(sinceMs))
      .groupBy('tool', 'at_ms')
      .select('tool', db.raw('floor(extract(epoch from requested_at) * 1000)::bigint as at_ms'), db.raw('count(*) as n')) as Promise<
      Array<{ tool: string; at_ms: string; n: string }>
    >,
    db('call_records')
      .whereIn('grant_id', grantIds)
      .whereIn('outcome', allowed)
      .where('requested_at', '>=', new Date(labelsSinceMs))
      .first(db.raw('1 as found')) as Promise<{ found: number } | undefined>,
  ]);
  return { calls: rows.map((row) => ({ tool: row.tool, atMs: Number(row.at_ms), n: Number(row.n) })), anySince: any !== undefined };
}
