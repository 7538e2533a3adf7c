import type { Knex } from 'knex';
import type { InvalidationScope } from '../cache/invalidation';
import type { Database } from '../db/database';
import type { Resources } from './resource-patterns';

type Queryable = Database | Knex.Transaction;

export type TargetKind = 'pod' | 'seat';
export type AudienceMode = 'members' | 'listed';
export type WriteMode = 'read' | 'approve' | 'write';

export interface GrantRow {
  id: string;
  parent_id: string | null;
  root_id: string;
  depth: number;
  connection_id: string;
  installation_id: string;
  broker_id: string;
  target_kind: TargetKind;
  target_id: string;
  /** The pod of the target: the pod itself, or the pod the seat is installed in. */
  target_pod_id: string;
  audience_mode: AudienceMode;
  audience: string[];
  tools: string[];
  write_mode: WriteMode;
  budget_calls: number;
  /** bigint column: node-postgres hands it over as a string. */
  budget_window_ms: number | string;
  expires_at: Date;
  created_at: Date;
  revoked_at: Date | null;
  /** jsonb: resource patterns by dimension; null constrains nothing. */
  resources: Resources | null;
  /** The connection owner whose capability this is (the same along a tree). */
  granted_by: string;
  /** Who made this record: the owner for a root, the attenuating agent for a child. */
  created_by: string;
  /** The OAuth client (an MCP host) a consent made this child for, and the person who consented. */
  oauth_client_id?: string | null;
  oauth_client_name?: string | null;
  oauth_consented_by?: string | null;
}

/** A position in a newest-first list: the sort key of the last item of the previous page. */
import type { ListPosition } from '../kernel/cursor';
export type { ListPosition };

export async function insertGrant(trx: Knex.Transaction, row: GrantRow): Promise<GrantRow> {
  const [inserted] = await trx<GrantRow>('grants').insert(row).returning('*');
  return inserted as GrantRow;
}

const CHAINS_SQL = `
with recursive chain as (
  select g.*, g.id as leaf_id, 0 as level from grants g where g.id = any(?::text[])
  union all
  select p.*, c.leaf_id, c.level + 1 from chain c join grants p on p.id = c.parent_id
)
select * from chain order by leaf_id, level`;

/**
 * The chains of grants, each the grant first and its root last, in one recursive query: the one
 * way a chain is read (grants/facts.ts builds the decisions' facts from it). Unknown ids are absent.
 */
export async function loadChains(db: Queryable, grantIds: readonly string[]): Promise<Map<string, GrantRow[]>> {
  const chains = new Map<string, GrantRow[]>();
  if (grantIds.length === 0) return chains;
  const result = await db.raw<{ rows: Array<GrantRow & { leaf_id: string; level: number }> }>(CHAINS_SQL, [[...grantIds]]);
  for (const { leaf_id: leafId, level: _level, ...grant } of result.rows) {
    const chain = chains.get(leafId);
    if (chain) chain.push(grant);
    else chains.set(leafId, [grant]);
  }
  return chains;
}

/** The chain of one grant, the grant first and its root last; empty when there is no such grant. */
export async function loadChain(db: Queryable, grantId: string): Promise<GrantRow[]> {
  return (await loadChains(db, [grantId])).get(grantId) ?? [];
}

export async function brokerIdOf(db: Queryable, grantId: string): Promise<string | undefined> {
  const row = await db('grants').where({ id: grantId }).first('broker_id');
  return row?.broker_id;
}

export async function rootIdOf(db: Queryable, grantId: string): Promise<string | undefined> {
  const row = await db('grants').where({ id: grantId }).first('root_id');
  return row?.root_id;
}

/**
 * Locks the root row of a tree. Revocation and attenuation both take this lock first, so they
 * run one after the other per tree: an attenuation that commits first is revoked with its
 * parent, and one that waits sees the revocation and is refused.
 */
export async function lockTree(trx: Knex.Transaction, rootId: string): Promise<void> {
  await trx.raw('select id from grants where id = ? for update', [rootId]);
}

/** Children of a grant that still count: neither revoked nor expired (under the tree's lock). */
export async function countLiveChildren(trx: Knex.Transaction, parentId: string, nowMs: number): Promise<number> {
  const [row] = await trx('grants')
    .where({ parent_id: parentId })
    .whereNull('revoked_at')
    .andWhere('expires_at', '>', new Date(nowMs))
    .count<Array<{ count: string }>>('* as count');
  return Number(row?.count ?? 0);
}

/** Revokes the grant and every descendant not revoked yet, all with the one timestamp. */
export async function revokeSubtree(trx: Knex.Transaction, grantId: string, revokedAt: Date): Promise<GrantRow[]> {
  const result = await trx.raw(
    `with recursive subtree as (
       select id from grants where id = ?
       union all
       select g.id from grants g join subtree s on g.parent_id = s.id
     )
     update grants set revoked_at = ?
      where id in (select id from subtree) and revoked_at is null
     returning *`,
    [grantId, revokedAt],
  );
  return result.rows as GrantRow[];
}

/**
 * The roots of the trees whose cached broker facts a change to (scope, id) can make wrong
 * (cache/invalidation.ts's port, filled in composition.ts).
 */
export async function treeRootsAffectedBy(db: Queryable, scope: InvalidationScope, id: string): Promise<string[]> {
  const grants = db('grants').distinct('root_id');
  switch (scope) {
    case 'grant-tree': // any grant of the tree names it
      grants.where('id', id);
      break;
    case 'connection':
      grants.where('connection_id', id);
      break;
    case 'broker':
      grants.where('broker_id', id);
      break;
    case 'pod': // membership decides effective audiences of the pod's grants
      grants.where('target_pod_id', id);
      break;
    case 'agent': // an agent is a principal only in its own pod; seat grants name it as target
      grants
        .whereIn('target_pod_id', db('agents').select('pod_id').where('id', id))
        .orWhere((q) => q.where('target_kind', 'seat').andWhere('target_id', id));
      break;
  }
  const rows: Array<{ root_id: string }> = await grants;
  return rows.map((row) => row.root_id);
}

/**
 * The pod's grants (targeting it or one of its seats) that this caller could possibly read,
 * newest first, after a position. A pre-filter, not the rule: it keeps a superset of what
 * policies/grants/scope.rego lets a caller read (every pod grant; a seat's own grants; any
 * grant on a connection the caller owns), so that a member among thousands of seat grants of
 * other seats is not asked about each of them; `grants/read` still decides every row returned.
 * test/grants/list-prefilter.test.ts holds the two to the same answers.
 */
export function readCandidatesAfter(
  db: Queryable,
  podId: string,
  caller: { kind: 'human' | 'agent'; id: string },
  after: ListPosition | null,
  size: number,
): Promise<GrantRow[]> {
  const query = db<GrantRow>('grants')
    .where({ target_pod_id: podId })
    .andWhere((scope) => {
      scope.where('target_kind', 'pod');
      if (caller.kind === 'agent') scope.orWhere((seat) => seat.where('target_kind', 'seat').andWhere('target_id', caller.id));
      else scope.orWhereIn('connection_id', db('connections').select('id').where('owner_id', caller.id));
    });
  if (after) query.whereRaw('(created_at, id) < (?, ?)', [after.at, after.id]);
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(size);
}

/** A grant of a tree with its budget: a level of the tree's windows (bucketMs 0: an exact window). */
export interface BudgetLevelRow {
  id: string;
  parentId: string | null;
  calls: number;
  windowMs: number;
}

export async function budgetLevelsOfTree(db: Queryable, rootId: string): Promise<BudgetLevelRow[]> {
  const rows: Array<Pick<GrantRow, 'id' | 'parent_id' | 'budget_calls' | 'budget_window_ms'>> = await db('grants')
    .where('root_id', rootId)
    .select('id', 'parent_id', 'budget_calls', 'budget_window_ms');
  return rows.map((row) => ({ id: row.id, parentId: row.parent_id, calls: row.budget_calls, windowMs: Number(row.budget_window_ms) }));
}

/** Grants by id, in no particular order (unknown ids are left out). */
export function findGrants(db: Queryable, ids: readonly string[]): Promise<GrantRow[]> {
  return db<GrantRow>('grants').whereIn('id', ids);
}
