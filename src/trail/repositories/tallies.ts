import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import * as codec from './codec';
import { ALLOWED_OUTCOMES, ofGrant } from './call-records';

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
