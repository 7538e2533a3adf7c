import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database';
import type { SlidingWindowBudget } from './sliding-window';

/**
 * A call counts in a rebuilt window from its `requested_at` plus this margin: the replica's clock
 * that stamped it and Redis's clock that counted it may differ a little, and counting a call
 * later than it was made can only admit fewer calls, never more.
 */
export const REBUILD_CLOCK_MARGIN_MS = 1000;

interface TreeGrant {
  id: string;
  parent_id: string | null;
  calls: number;
  window_ms: number;
  bucket_ms: number;
}

// Every allowed call of the tree counts at its own grant and every ancestor (closure), within
// that level's window: the newest `calls` of them for an exact window (older ones can no longer
// decide anything), per bucket for a bucketed one.
const TRAIL_SQL = `
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
 * Rebuilds every window of a grant tree from the call trail, after Redis lost the tree's keys (a
 * restart without persistence, an eviction): a used-up budget stays used up. Answers the tree's
 * version, the one this call stored or the one another replica stored first.
 */
export function rebuildTreeWindows(db: Database, budget: SlidingWindowBudget, rootId: string): Promise<string> {
  // Concurrent checks of a tree whose keys are gone (every new tree's first checks, or all trees
  // after a Redis restart) share one rebuild per replica instead of each reading the trail.
  let running = inFlight.get(budget);
  if (!running) inFlight.set(budget, (running = new Map()));
  const trees = running;
  let rebuilding = trees.get(rootId);
  if (!rebuilding) {
    rebuilding = rebuild(db, budget, rootId).finally(() => trees.delete(rootId));
    trees.set(rootId, rebuilding);
  }
  return rebuilding;
}

/** Rebuilds under way, per budget (one Redis) and tree. */
const inFlight = new WeakMap<SlidingWindowBudget, Map<string, Promise<string>>>();

async function rebuild(db: Database, budget: SlidingWindowBudget, rootId: string): Promise<string> {
  const rows: Array<{ id: string; parent_id: string | null; budget_calls: number; budget_window_ms: string | number }> = await db('grants')
    .where('root_id', rootId)
    .select('id', 'parent_id', 'budget_calls', 'budget_window_ms');
  const tree: TreeGrant[] = rows.map((row) => {
    const level = { calls: row.budget_calls, windowMs: Number(row.budget_window_ms) };
    return { id: row.id, parent_id: row.parent_id, calls: level.calls, window_ms: level.windowMs, bucket_ms: budget.bucketMsOf(level) };
  });
  const result = await db.raw<{ rows: Array<{ level_id: string; at_ms: string; n: string }> }>(TRAIL_SQL, [
    JSON.stringify(tree),
    REBUILD_CLOCK_MARGIN_MS,
    REBUILD_CLOCK_MARGIN_MS,
  ]);
  const counted = new Map<string, Array<[number, number]>>(tree.map((grant) => [grant.id, []]));
  for (const row of result.rows) counted.get(row.level_id)!.push([Number(row.at_ms), Number(row.n)]);
  return budget.restore(
    rootId,
    tree.map((grant) => ({ grantId: grant.id, calls: grant.calls, windowMs: grant.window_ms, counted: counted.get(grant.id)! })),
    randomUUID(),
  );
}
