import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import * as codec from './codec';
import { ALLOWED_OUTCOMES, ofGrant } from './call-record-rows';

type Queryable = Database | Knex.Transaction;

/**
 * Counts over the call trail that other domains read: a grant subtree's budget use (the console's
 * grant pages) and a tree's calls per tool (a session rebuilt after Redis lost it). The trail keys
 * grants by their UUID (call-records.ts), so the typeids are turned into UUIDs here.
 */

/**
 * Below one grant, in one read of the grants and one of the trail: how many grants hang under it
 * (all, and those a revocation would still revoke: not revoked, not expired), and how many allowed
 * calls the grant or any grant below it made since `sinceMs`. That count is the grant's budget use:
 * an allowed call takes one unit at its grant and at every ancestor, which is how the budget windows
 * are rebuilt from the trail too (src/budget/rebuild.ts).
 */
export async function subtreeUsage(
  db: Queryable,
  grantId: string,
  sinceMs: number,
  nowMs: number,
): Promise<{ descendants: number; liveDescendants: number; used: number }> {
  const subtree = await db.raw<{ rows: Array<{ id: string; live: boolean }> }>(
    `with recursive subtree as (
       select id, revoked_at, expires_at from grants where id = ?
       union all
       select g.id, g.revoked_at, g.expires_at from grants g join subtree s on g.parent_id = s.id
     )
     select id, (revoked_at is null and expires_at > to_timestamp(? / 1000.0)) as live from subtree`,
    [grantId, nowMs],
  );
  const below = subtree.rows.filter((row) => row.id !== grantId);
  const uuids = subtree.rows.map((row) => codec.uuidOf('grant', row.id));
  const counted = await db.raw<{ rows: Array<{ used: string }> }>(
    `select count(*) as used from unnest(?::uuid[]) as g(uid)
       cross join lateral (
         select 1 from call_records r
          where ${ofGrant('r.grant_id', 'g.uid')} and r.requested_at > to_timestamp(? / 1000.0) and r.outcome in (${ALLOWED_OUTCOMES})
       ) c`,
    [uuids, sinceMs],
  );
  return {
    descendants: below.length,
    liveDescendants: below.filter((row) => row.live).length,
    used: Number(counted.rows[0]?.used ?? 0),
  };
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
  const uuids = grantIds.map((id) => codec.uuidOf('grant', id));
  const allowedOf = (since: string) => `
    select r.shape, r.requested_at from unnest(?::uuid[]) as g(uid)
      cross join lateral (
        select r.shape, r.requested_at from call_records r
         where ${ofGrant('r.grant_id', 'g.uid')} and r.requested_at >= ${since} and r.outcome in (${ALLOWED_OUTCOMES})
      ) r`;
  const [perTool, any] = await Promise.all([
    db.raw<{ rows: Array<{ tool: string; at_ms: string; n: string }> }>(
      `select s.tool, floor(extract(epoch from a.requested_at) * 1000)::bigint as at_ms, count(*) as n
         from (${allowedOf('?')}) a join call_record_shapes s on s.code = a.shape
        group by 1, 2`,
      [uuids, new Date(sinceMs)],
    ),
    db.raw<{ rows: unknown[] }>(`${allowedOf('?')} limit 1`, [uuids, new Date(labelsSinceMs)]),
  ]);
  return {
    calls: perTool.rows.map((row) => ({ tool: row.tool, atMs: Number(row.at_ms), n: Number(row.n) })),
    anySince: any.rows.length > 0,
  };
}

/** Checks as the trail's tallies count them: per pod, UTC hour and decision (call_tallies). */
export interface TallyRow {
  pod_id: string;
  hour: Date;
  decision: 'allowed' | 'denied' | 'awaiting_approval';
  /** A denial's reason; '' otherwise. */
  reason: string;
  /** The org rule that denied (its id, or its package); '' for the core's own reasons. */
  org_rule: string;
  calls: number;
}

/** A tree's allowed calls in a UTC day (call_tree_tallies): which trees are busiest. */
export interface TreeTallyRow {
  pod_id: string;
  /** YYYY-MM-DD (UTC). */
  day: string;
  root_id: string;
  calls: number;
}

/**
 * Adds counts to both tables in one statement. The rows are distinct by key (the writer sums before
 * it sends) and sorted, so two replicas adding to the same rows lock them in the same order and
 * never deadlock.
 */
export async function addTallies(db: Database, rows: readonly TallyRow[], trees: readonly TreeTallyRow[]): Promise<void> {
  if (rows.length === 0 && trees.length === 0) return;
  await db.raw(
    `with checks as (
       insert into call_tallies (pod_id, hour, decision, reason, org_rule, calls)
       select * from unnest(?::text[], ?::timestamptz[], ?::text[], ?::text[], ?::text[], ?::bigint[])
       on conflict (pod_id, hour, decision, reason, org_rule) do update set calls = call_tallies.calls + excluded.calls
       returning 1
     ), trees as (
       insert into call_tree_tallies (pod_id, day, root_id, calls)
       select * from unnest(?::text[], ?::date[], ?::text[], ?::bigint[])
       on conflict (pod_id, day, root_id) do update set calls = call_tree_tallies.calls + excluded.calls
       returning 1
     )
     select (select count(*) from checks) + (select count(*) from trees) as added`,
    [
      ...(['pod_id', 'hour', 'decision', 'reason', 'org_rule', 'calls'] as const).map((column) => rows.map((row) => row[column])),
      ...(['pod_id', 'day', 'root_id', 'calls'] as const).map((column) => trees.map((row) => row[column])),
    ] as Knex.RawBinding[],
  );
}

/** A pod's checks per hour and decision in [from, to). */
export async function podHourlyTallies(
  db: Queryable,
  podId: string,
  from: Date,
  to: Date,
): Promise<Array<{ hour: Date; decision: TallyRow['decision']; calls: number }>> {
  const { rows } = await db.raw<{ rows: Array<{ hour: Date; decision: TallyRow['decision']; calls: string }> }>(
    `select hour, decision, sum(calls) as calls from call_tallies
      where pod_id = ? and hour >= ? and hour < ? group by 1, 2 order by 1`,
    [podId, from, to],
  );
  return rows.map((row) => ({ hour: row.hour, decision: row.decision, calls: Number(row.calls) }));
}

/** A pod's denials in [from, to) by reason and org rule. */
export async function podDenials(
  db: Queryable,
  podId: string,
  from: Date,
  to: Date,
): Promise<Array<{ reason: string; orgRule: string; calls: number }>> {
  const { rows } = await db.raw<{ rows: Array<{ reason: string; org_rule: string; calls: string }> }>(
    `select reason, org_rule, sum(calls) as calls from call_tallies
      where pod_id = ? and hour >= ? and hour < ? and decision = 'denied' group by 1, 2`,
    [podId, from, to],
  );
  return rows.map((row) => ({ reason: row.reason, orgRule: row.org_rule, calls: Number(row.calls) }));
}

/** The pod's trees with the most allowed calls on the UTC days since `since`'s, busiest first. */
export async function podBusiestTrees(
  db: Queryable,
  podId: string,
  since: Date,
  limit: number,
): Promise<Array<{ rootId: string; calls: number }>> {
  const { rows } = await db.raw<{ rows: Array<{ root_id: string; calls: string }> }>(
    `select root_id, sum(calls) as calls from call_tree_tallies
      where pod_id = ? and day >= (?::timestamptz at time zone 'UTC')::date group by 1 order by 2 desc, 1 limit ?`,
    [podId, since, limit],
  );
  return rows.map((row) => ({ rootId: row.root_id, calls: Number(row.calls) }));
}

/** Tallies of hours and days before `before` go (the trail's retention). */
export async function dropTalliesBefore(db: Queryable, before: Date): Promise<number> {
  const hours = await db('call_tallies').where('hour', '<', before).delete();
  const days = await db('call_tree_tallies').where('day', '<', before.toISOString().slice(0, 10)).delete();
  return hours + days;
}
