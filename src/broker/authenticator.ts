import { acceptOnly, bearerToken, resolveCredential, unauthenticated, type Authenticator, type BrokerPrincipal } from '../http/auth';
import { findBrokerByTokenHash } from '../credentials/lookup';
import { hashToken, hasValidShape } from '../credentials/tokens';
import type { Deps } from '../deps';
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

export type CheckingBroker = BrokerPrincipal & {
  /** True when the token came from this replica's memory and was not looked up for this request. */
  remembered: boolean;
};

/**
 * The broker check's authenticator: the shared bearer parsing and refusals, with a fast path for
 * `bkt_` tokens so that a warm check reads nothing from Postgres. Any other credential goes the
 * shared way (401, or 403 `credential_not_accepted`).
 */
export const brokerCheckCredentials: Authenticator<'broker'> = {
  kinds: ['broker'],
  async authenticate(ctx, deps): Promise<CheckingBroker> {
    const token = bearerToken(ctx);
    if (!token.startsWith('bkt_')) {
      const principal = await resolveCredential(deps, token);
      if (!principal) throw unauthenticated();
      return { ...acceptOnly(principal, ['broker']), remembered: false };
    }
    if (!hasValidShape(token, 'bkt')) throw unauthenticated();
    const tokenHash = hashToken(token);
    const brokerId = deps.broker.brokerTokens.get(tokenHash, Date.now());
    if (brokerId) return { kind: 'broker', brokerId, tokenHash, remembered: true };
    return { ...(await verifyBroker(deps, tokenHash)), remembered: false };
  },
};

/** Looks the token up in Postgres (and remembers it); 401 when it is unknown or revoked. */
export async function verifyBroker(deps: Deps, tokenHash: string): Promise<BrokerPrincipal> {
  const found = await findBrokerByTokenHash(deps.db, tokenHash);
  if (!found) {
    deps.broker.brokerTokens.forget(tokenHash);
    throw unauthenticated();
  }
  deps.broker.brokerTokens.set(tokenHash, found.brokerId, Date.now());
  return { kind: 'broker', ...found };
}
