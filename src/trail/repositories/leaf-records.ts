import { ID_PREFIXES } from '../../kernel/ids';
import { COMPLETED_AT, decode, withRoots, type CallRecordRow, type Queryable, type StoredRow } from './call-record-rows';

/** A span of check times: where the records holding some leaves are, so that Postgres reads only those days. */
export interface CheckTimes {
  from: Date | null;
  to: Date | null;
}

/**
 * How long before its leaf's append a record's check may have been made and still be looked for
 * in the days around the append first: a slow check, an outcome reported within the hour, a clock
 * somewhat behind the database's. A record older than that (an outcome reported late) is found
 * by a second look, over every day.
 */
export const CHECKED_BEFORE_APPEND_MS = 3_600_000;
export const CLOCK_AHEAD_MS = 300_000;

/**
 * `near`: the span of check times the signed checkpoints around the leaves' appends bound (as
 * tree-store's checkTimesOf reads it), worked out in the same statement as the lookup: one round
 * trip. Postgres then skips the other days' partitions as it runs the statement.
 */
export type Within = CheckTimes | 'near';

/**
 * The records (live and held) holding a leaf, or an outcome's leaf, in these ranges of leaf indices
 * `[lo, hi)`, with their grants' roots: what the tree's lower levels are rebuilt from. The BRIN
 * indexes on the leaf columns find them (rows are written in leaf order). `within` narrows the
 * live records to checks made in that span: Postgres then plans and reads only those days'
 * partitions (it is a hint: a record outside it is simply not found).
 */
export async function callRecordsOfLeaves(
  db: Queryable,
  ranges: ReadonlyArray<readonly [number, number]>,
  within?: Within,
): Promise<CallRecordRow[]> {
  if (ranges.length === 0) return [];
  const query = ofLeavesQuery(ranges, within);
  const { rows } = await db.raw<{ rows: Array<StoredRow & { grant_typeid: string | null; root_id: string | null }> }>(
    query.sql,
    query.bindings,
  );
  const decoded = rows.map((row) => ({ ...decode(row), root_id: row.root_id ?? undefined, typeid: row.grant_typeid }));
  // The roots came with the rows, their grants named in SQL; should that naming ever differ from ours, they are read by id.
  if (decoded.every((row) => row.typeid === row.grant_id))
    return decoded.map(({ typeid: _, ...row }) => ({ ...row, root_id: row.root_id ?? row.grant_id }));
  return withRoots(
    db,
    decoded.map(({ typeid: _, root_id: __, ...row }) => row),
  );
}

/** A grant's id (its prefix and the base32 of its UUID, as ids.ts mints it) from the UUID column `uuid`. */
const grantIdOf = (uuid: string) =>
  `(select '${ID_PREFIXES.grant}_' || string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', substring(b.bits from i * 5 + 1 for 5)::int + 1, 1), '' order by i)
      from (select B'00' || ('x' || replace(${uuid}::text, '-', ''))::bit(128) as bits) b, generate_series(0, 25) i)`;

/** Only the columns a leaf is rebuilt from (decode's others read as null). */
const LEAF_READ = `r.id, r.grant_id, s.tool, s.principal_kind, s.principal_id, r.outcome, r.reason, r.approval_id, null as decision_id,
  null as error_code, r.args_digest, r.requested_at, ${COMPLETED_AT} as completed_at, null as duration_ms, null as credential_fingerprint,
  null as credential_expires_at, r.leaf_index, r.outcome_leaf_index`;
const LEAF_COLUMNS =
  'id, grant_id, shape, outcome, reason, approval_id, args_digest, requested_at, completed_after_ms, leaf_index, outcome_leaf_index';

/** The bounds of `near`: null where no checkpoint bounds the leaves (the look is then over every day). */
function nearBounds(ranges: ReadonlyArray<readonly [number, number]>) {
  return {
    sql: `bounds as materialized (
            select (select signed_at from trail_checkpoints where size <= ? order by size desc limit 1) - ? * interval '1 millisecond' as lo,
                   (select signed_at from trail_checkpoints where size >= ? order by size asc limit 1) + ? * interval '1 millisecond' as hi)`,
    bindings: [ranges[0]![0], CHECKED_BEFORE_APPEND_MS, ranges.at(-1)![1], CLOCK_AHEAD_MS],
    where: ` and r.requested_at >= coalesce((select lo from bounds), '-infinity') and r.requested_at < coalesce((select hi from bounds), 'infinity')`,
  };
}

/** The where clause of the leaves in these ranges, records' or outcomes'. */
function inRanges(ranges: ReadonlyArray<readonly [number, number]>) {
  return {
    sql: ranges
      .map(() => '(r.leaf_index >= ? and r.leaf_index < ?) or (r.outcome_leaf_index >= ? and r.outcome_leaf_index < ?)')
      .join(' or '),
    bindings: ranges.flatMap(([lo, hi]) => [lo, hi, lo, hi]),
  };
}

function ofLeavesQuery(ranges: ReadonlyArray<readonly [number, number]>, within?: Within) {
  const where = inRanges(ranges);
  const near = within === 'near' ? nearBounds(ranges) : undefined;
  const times = within === 'near' ? undefined : within;
  // An unnamed statement is planned with its values: the partitions outside the span are never opened.
  const span = [times?.from && 'r.requested_at >= ?', times?.to && 'r.requested_at < ?'].filter(Boolean);
  const spanBindings = [times?.from, times?.to].filter((at): at is Date => !!at);
  const live = `select ${LEAF_COLUMNS} from call_records r where (${where.sql})${span.map((part) => ` and ${part}`).join('')}${near?.where ?? ''}`;
  const held = `select ${LEAF_COLUMNS} from held_call_records r where ${where.sql}`;
  // Each grant's root (a member of the leaf) in the same statement: its id named once per grant
  // (materialized, so once, not per row), its row found by key.
  const names = `select grant_id, ${grantIdOf('grant_id')} as typeid from (select distinct grant_id from rows) d`;
  return {
    sql: `with ${near ? `${near.sql}, ` : ''}rows as (${live} union all ${held}), names as materialized (${names})
          select ${LEAF_READ}, n.typeid as grant_typeid, g.root_id from rows r join call_record_shapes s on s.code = r.shape
            join names n on n.grant_id = r.grant_id left join grants g on g.id = n.typeid`,
    bindings: [...(near?.bindings ?? []), ...where.bindings, ...spanBindings, ...where.bindings],
  };
}

/**
 * The leaf indices in these ranges that a record (live or held) still holds, as `callRecordsOfLeaves`
 * finds them (`near`: among the checks around their appends only): what tells a kept block's leaves are all still in the records,
 * without reading the records themselves.
 */
export async function leavesHeld(db: Queryable, ranges: ReadonlyArray<readonly [number, number]>, within?: 'near'): Promise<Set<number>> {
  if (ranges.length === 0) return new Set();
  const where = inRanges(ranges);
  const near = within ? nearBounds(ranges) : { sql: 'bounds as (select 1)', bindings: [], where: '' };
  const { rows } = await db.raw<{ rows: Array<{ leaf_index: string | null; outcome_leaf_index: string | null }> }>(
    `with ${near.sql}
     select r.leaf_index, r.outcome_leaf_index from call_records r where (${where.sql})${near.where}
     union all select r.leaf_index, r.outcome_leaf_index from held_call_records r where ${where.sql}`,
    [...near.bindings, ...where.bindings, ...where.bindings],
  );
  const held = new Set<number>();
  const inside = (leaf: number) => ranges.some(([lo, hi]) => leaf >= lo && leaf < hi);
  for (const row of rows)
    for (const leaf of [row.leaf_index, row.outcome_leaf_index]) if (leaf !== null && inside(Number(leaf))) held.add(Number(leaf));
  return held;
}

/** The plan Postgres runs callRecordsOfLeaves with, and its timing (`npm run bench:trail` prints it). */
export async function callRecordsOfLeavesPlan(
  db: Queryable,
  ranges: ReadonlyArray<readonly [number, number]>,
  within?: Within,
): Promise<string> {
  const query = ofLeavesQuery(ranges, within);
  const { rows } = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`explain (analyze, buffers) ${query.sql}`, query.bindings);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}
