import type { Database } from '../db/database';
import { LruCache } from '../cache/lru';
import { toGrantFact } from '../grants/facts';
import type { ChainLink as ChainLinkFact } from '../kernel/decisions/catalogue';
import type { GrantRow } from '../grants/repository';

/**
 * What never changes about a grant once it exists: its place in the tree, its broker and
 * connection, target, audience rule, tools, write mode, budget and expiry. It is the Rego grant
 * fact of policies/lib/grants.rego (as the grants domain builds it) without `revoked`, the one
 * mutable column, which lives with the tree's mutable facts.
 */
export type ChainLink = Omit<ChainLinkFact, 'revoked'>;

/** The grant first, its root last. */
export type Chain = readonly ChainLink[];

const CHAIN_SQL = `
with recursive chain as (
  select g.*, 0 as level from grants g where g.id = ?
  union all
  select p.*, c.level + 1 from grants p join chain c on p.id = c.parent_id
)
select * from chain order by level`;

function toLink(row: GrantRow): ChainLink {
  const { revoked: _mutable, ...fact } = toGrantFact(row);
  return { ...fact, parent_id: row.parent_id, root_id: row.root_id, broker_id: row.broker_id, connection_id: row.connection_id };
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
    const chain = Object.freeze(result.rows.map(toLink));
    this.chains.set(grantId, chain);
    return chain;
  }
}
