import { ID_PREFIXES } from '../../kernel/ids';
import { COMPLETED_AT, decode, withRoots, type CallRecordRow, type Queryable, type StoredRow } from './call-record-rows';

/** A span of check times: where the records holding some leaves are, so that Postgres reads only those days. */
export interface CheckTimes {
  from: Date | null;
  to: Date | null;
}

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
  within?: CheckTimes,
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

/**
 * The span as literal values: an unnamed statement is planned with them, so the partitions outside
 * it are never planned nor opened. (Read from the checkpoints inside the statement instead, the
 * span would only prune as the statement runs, after every day partition was planned: 8 ms
 * instead of 0.5 at 64 days, more than the round trip it saves.)
 */
function spanOf(within?: CheckTimes): { sql: string; bindings: Date[] } {
  const parts = [within?.from && ' and r.requested_at >= ?', within?.to && ' and r.requested_at < ?'].filter(Boolean);
  return { sql: parts.join(''), bindings: [within?.from, within?.to].filter((at): at is Date => !!at) };
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

function ofLeavesQuery(ranges: ReadonlyArray<readonly [number, number]>, within?: CheckTimes) {
  const where = inRanges(ranges);
  const { sql: span, bindings: spanBindings } = spanOf(within);
  const live = `select ${LEAF_COLUMNS} from call_records r where (${where.sql})${span}`;
  const held = `select ${LEAF_COLUMNS} from held_call_records r where ${where.sql}`;
  // Each grant's root (a member of the leaf) in the same statement: its id named once per grant
  // (materialized, so once, not per row), its row found by key.
  const names = `select grant_id, ${grantIdOf('grant_id')} as typeid from (select distinct grant_id from rows) d`;
  return {
    sql: `with rows as (${live} union all ${held}), names as materialized (${names})
          select ${LEAF_READ}, n.typeid as grant_typeid, g.root_id from rows r join call_record_shapes s on s.code = r.shape
            join names n on n.grant_id = r.grant_id left join grants g on g.id = n.typeid`,
    bindings: [...where.bindings, ...spanBindings, ...where.bindings],
  };
}

/**
 * How many of the leaves in these ranges a record (live or held) still holds, as
 * `callRecordsOfLeaves` finds them (within the span, when given): all of them tells that a kept
 * block's leaves are still in the records, without reading the records, nor a row per leaf.
 * Distinct leaves: a leaf two rows claim counts once.
 */
export async function leavesHeld(db: Queryable, ranges: ReadonlyArray<readonly [number, number]>, within?: CheckTimes): Promise<number> {
  if (ranges.length === 0) return 0;
  const where = inRanges(ranges);
  const span = spanOf(within);
  const leafIn = ranges.map(() => '(leaf >= ? and leaf < ?)').join(' or ');
  const { rows } = await db.raw<{ rows: Array<{ held: string }> }>(
    `with rows as (select r.leaf_index, r.outcome_leaf_index from call_records r where (${where.sql})${span.sql}
                   union all select r.leaf_index, r.outcome_leaf_index from held_call_records r where ${where.sql})
     select count(distinct leaf) as held from (select leaf_index as leaf from rows union all select outcome_leaf_index from rows) x
      where ${leafIn}`,
    [...where.bindings, ...span.bindings, ...where.bindings, ...ranges.flatMap(([lo, hi]) => [lo, hi])],
  );
  return Number(rows[0]!.held);
}

/** The plan Postgres runs callRecordsOfLeaves with, and its timing (`npm run bench:trail` prints it). */
export async function callRecordsOfLeavesPlan(
  db: Queryable,
  ranges: ReadonlyArray<readonly [number, number]>,
  within?: CheckTimes,
): Promise<string> {
  const query = ofLeavesQuery(ranges, within);
  const { rows } = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`explain (analyze, buffers) ${query.sql}`, query.bindings);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}
