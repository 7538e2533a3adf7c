import * as codec from './codec';
import { ALLOWED_OUTCOMES, ofGrant, type Queryable } from './call-record-rows';

// Every allowed call of the tree counts at its own grant and every ancestor (closure), within
// that level's window: the newest `calls` of them for an exact window (older ones can no longer
// decide anything), per bucket for a bucketed one.
const WINDOW_CALLS_SQL = `
with recursive tree as (
  select * from json_to_recordset(?::json) as t(id text, uid uuid, parent_id text, calls int, window_ms bigint, bucket_ms bigint)
), closure as (
  select uid as grant_uid, id as level_id from tree
  union all
  select c.grant_uid, t.parent_id from closure c join tree t on t.id = c.level_id where t.parent_id is not null
), counted as (
  select cl.level_id, l.calls, l.bucket_ms,
         (extract(epoch from r.requested_at) * 1000)::bigint + ?::bigint as at_ms
    from closure cl
    join tree l on l.id = cl.level_id
    -- One index range scan (grant key, requested_at) per level and live day; OFFSET 0 keeps the
    -- planner from flattening it into a merge join that walks the index of every grant's calls.
    cross join lateral (
      select r.requested_at from call_records r
       where ${ofGrant('r.grant_id', 'cl.grant_uid')}
         and r.requested_at > now() - (l.window_ms + l.bucket_ms + ?::bigint) * interval '1 millisecond'
         and r.outcome in (${ALLOWED_OUTCOMES})
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
  levels: ReadonlyArray<{ id: string; parentId: string | null; calls: number; windowMs: number; bucketMs: number }>,
  marginMs: number,
): Promise<Array<{ levelId: string; atMs: number; n: number }>> {
  const tree = levels.map((l) => ({
    id: l.id,
    uid: codec.uuidOf('grant', l.id),
    parent_id: l.parentId,
    calls: l.calls,
    window_ms: l.windowMs,
    bucket_ms: l.bucketMs,
  }));
  const result = await db.raw<{ rows: Array<{ level_id: string; at_ms: string; n: string }> }>(WINDOW_CALLS_SQL, [
    JSON.stringify(tree),
    marginMs,
    marginMs,
  ]);
  return result.rows.map((row) => ({ levelId: row.level_id, atMs: Number(row.at_ms), n: Number(row.n) }));
}
