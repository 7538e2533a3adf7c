import type { Database } from '../db/database';
import { LruCache } from '../cache/lru';

/**
 * What never changes about a grant once it exists: its place in the tree, its broker and
 * connection, target, audience rule, tools, write mode, budget and expiry. (Revocation is the
 * one mutable column; it lives with the tree's mutable facts.) Field names are the Rego grant
 * fact of policies/lib/grants.rego, plus broker_id and connection_id.
 */
export interface GrantFact {
  id: string;
  parent_id: string | null;
  root_id: string;
  broker_id: string;
  connection_id: string;
  target: { kind: 'pod' | 'seat'; id: string; pod_id: string };
  audience_mode: 'members' | 'listed';
  audience: string[];
  tools: string[];
  write_mode: 'read' | 'write';
  budget: { calls: number; window_ms: number };
  expires_at_ms: number;
}

/** The grant first, its root last. */
export type Chain = readonly GrantFact[];

interface GrantRow {
  id: string;
  parent_id: string | null;
  root_id: string;
  broker_id: string;
  connection_id: string;
  target_kind: 'pod' | 'seat';
  target_id: string;
  target_pod_id: string;
  audience_mode: 'members' | 'listed';
  audience: string[];
  tools: string[];
  write_mode: 'read' | 'write';
  budget_calls: number;
  budget_window_ms: string | number;
  expires_at: Date;
}

const CHAIN_SQL = `
with recursive chain as (
  select g.*, 0 as level from grants g where g.id = ?
  union all
  select p.*, c.level + 1 from grants p join chain c on p.id = c.parent_id
)
select id, parent_id, root_id, broker_id, connection_id, target_kind, target_id, target_pod_id,
       audience_mode, audience, tools, write_mode, budget_calls, budget_window_ms, expires_at
from chain order by level`;

function toFact(row: GrantRow): GrantFact {
  return {
    id: row.id,
    parent_id: row.parent_id,
    root_id: row.root_id,
    broker_id: row.broker_id,
    connection_id: row.connection_id,
    target: { kind: row.target_kind, id: row.target_id, pod_id: row.target_pod_id },
    audience_mode: row.audience_mode,
    audience: row.audience,
    tools: row.tools,
    write_mode: row.write_mode,
    budget: { calls: row.budget_calls, window_ms: Number(row.budget_window_ms) },
    expires_at_ms: row.expires_at.getTime(),
  };
}

/** One recursive query on a miss; a hit costs nothing. Unknown grants are not cached. */
export class ChainCache {
  private readonly chains: LruCache<string, Chain>;

  constructor(
    private readonly db: Database,
    capacity = 10_000,
  ) {
    this.chains = new LruCache(capacity);
  }

  async get(grantId: string): Promise<Chain | null> {
    const cached = this.chains.get(grantId);
    if (cached) return cached;
    const result = await this.db.raw<{ rows: GrantRow[] }>(CHAIN_SQL, [grantId]);
    if (result.rows.length === 0) return null;
    const chain = Object.freeze(result.rows.map(toFact));
    this.chains.set(grantId, chain);
    return chain;
  }
}
