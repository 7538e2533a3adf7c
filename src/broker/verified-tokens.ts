import { LruCache } from '../cache/lru';

/**
 * Broker tokens this replica verified recently, by SHA-256. A remembered token is trusted only
 * where it is confirmed again: under a grant tree's cached facts (a broker revocation stamps every
 * tree of the broker) or, for an answer that concerns no tree of its own, against Postgres.
 */
export class VerifiedBrokerTokens {
  private readonly tokens = new LruCache<string, { brokerId: string; at: number }>(1000);

  constructor(private readonly maxAgeMs: number) {}

  get(hash: string, now: number): string | undefined {
    const entry = this.tokens.get(hash);
    if (!entry || now - entry.at > this.maxAgeMs) return undefined;
    return entry.brokerId;
  }

  set(hash: string, brokerId: string, now: number): void {
    this.tokens.set(hash, { brokerId, at: now });
  }

  forget(hash: string): void {
    this.tokens.delete(hash);
  }
}
