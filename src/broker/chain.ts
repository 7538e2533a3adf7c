import type { Database } from '../db/database';
import { LruCache } from '../cache/lru';
import { loadChainLinks } from '../grants/facts';
import type { ChainLink } from '../kernel/decisions/catalogue';

/**
 * What never changes about a grant once it exists: its place in the tree, its broker and
 * connection, target, audience rule, tools, write mode, budget and expiry. It is the Rego grant
 * fact of policies/lib/grants.rego (as the grants domain builds it) without `revoked`, the one
 * mutable column, which lives with the tree's mutable facts.
 */
export type FixedLink = Omit<ChainLink, 'revoked'>;

/** The grant first, its root last. */
export type Chain = readonly FixedLink[];

/** One query on a miss (the grants domain's chain); a hit costs nothing. Unknown grants are not cached. */
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
    const links = await loadChainLinks(this.db, grantId);
    if (links.length === 0) return null;
    // `revoked` is left out: it is the one mutable fact, read with the tree's others.
    const chain: Chain = Object.freeze(links.map(({ revoked: _mutable, ...fixed }) => fixed));
    this.chains.set(grantId, chain);
    return chain;
  }
}
