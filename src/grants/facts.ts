import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { ConnectionFact, GrantFact } from '../kernel/decisions/catalogue';
import type { ConnectionRow } from '../connections/repository';
import type { GrantRow } from './repository';

export type { ConnectionFact, GrantFact } from '../kernel/decisions/catalogue';

type Queryable = Database | Knex.Transaction;

export interface GrantFacts {
  grant: GrantRow;
  /** The grant first, its root last. */
  chain: GrantFact[];
  connection: ConnectionFact;
}

/** What the grant decisions of policies/grants take as `input.grant`. */
export interface PolicyGrantFacts {
  chain: GrantFact[];
  members: string[];
  connection: ConnectionFact;
}

/**
 * The builders of the facts the grant and broker decisions share (kernel/decisions/facts.ts):
 * one each, whatever query loaded the row.
 */
export function toConnectionFact(
  row: Pick<ConnectionRow, 'id' | 'owner_id' | 'kind' | 'status'>,
  tools: ConnectionFact['tools'],
): ConnectionFact {
  return { id: row.id, owner_id: row.owner_id, kind: row.kind, status: row.status, tools };
}

export function toGrantFact(row: GrantRow): GrantFact {
  return {
    id: row.id,
    target: { kind: row.target_kind, id: row.target_id, pod_id: row.target_pod_id },
    audience_mode: row.audience_mode,
    audience: row.audience,
    tools: row.tools,
    write_mode: row.write_mode,
    budget: { calls: row.budget_calls, window_ms: Number(row.budget_window_ms) },
    expires_at_ms: new Date(row.expires_at).getTime(),
    revoked: row.revoked_at !== null,
    ...(row.resources ? { resources: row.resources } : {}),
  };
}

export function policyFacts(facts: Pick<GrantFacts, 'chain' | 'connection'>, members: string[]): PolicyGrantFacts {
  return { chain: facts.chain, members, connection: facts.connection };
}

type ChainRow = GrantRow & { leaf_id: string; pos: number; connection: ConnectionFact | null };

/**
 * Loads the chains of several grants, each with its connection, in one query: a recursive CTE
 * walks up from every grant to its root, and the connection (with its enabled tools) is joined
 * once per grant. Unknown ids are simply absent from the map.
 */
export async function loadGrantFactsMany(db: Queryable, grantIds: readonly string[]): Promise<Map<string, GrantFacts>> {
  const found = new Map<string, GrantFacts>();
  if (grantIds.length === 0) return found;
  const result = await db.raw(
    `with recursive chain as (
       select g.*, g.id as leaf_id, 0 as pos from grants g where g.id = any(?::text[])
       union all
       select p.*, c.leaf_id, c.pos + 1 from chain c join grants p on p.id = c.parent_id
     )
     select chain.*,
            case when chain.pos = 0 then json_build_object(
              'id', con.id, 'owner_id', con.owner_id, 'kind', con.kind, 'status', con.status,
              'tools', coalesce(
                (select json_object_agg(t.name, t.access) from connection_tools t where t.connection_id = con.id),
                '{}'::json))
            end as connection
       from chain
       left join connections con on chain.pos = 0 and con.id = chain.connection_id
      order by chain.leaf_id, chain.pos`,
    [[...grantIds]],
  );
  for (const row of result.rows as ChainRow[]) {
    const { leaf_id: leafId, pos, connection, ...grant } = row;
    if (pos === 0 && connection) {
      found.set(leafId, { grant, chain: [toGrantFact(grant)], connection: toConnectionFact(connection, connection.tools) });
    } else {
      found.get(leafId)?.chain.push(toGrantFact(grant));
    }
  }
  return found;
}

/** The chain of one grant (the grant first, the root last) with its connection. */
export async function loadGrantFacts(db: Queryable, grantId: string): Promise<GrantFacts | undefined> {
  return (await loadGrantFactsMany(db, [grantId])).get(grantId);
}

/** Current members of a pod, humans and installed agents: what effective audiences are made of. */
export async function currentMemberIds(db: Queryable, podId: string): Promise<string[]> {
  const rows: Array<{ member_id: string }> = await db('pod_members').where({ pod_id: podId }).select('member_id');
  return rows.map((row) => row.member_id);
}
