import { acceptOnly, bearerToken, unauthenticated } from '../credentials/authenticators';
import { findBrokerByTokenHash } from '../credentials/lookup';
import { hashToken, hasValidShape } from '../credentials/tokens';
import type { BrokerPrincipal } from '../kernel/principals';
import type { Authenticator } from '../kernel/route';
import type { BrokerDeps } from './deps';

export type CheckingBroker = BrokerPrincipal & {
  /** True when the token came from this replica's memory and was not looked up for this request. */
  remembered: boolean;
};

type TokenDeps = Pick<BrokerDeps, 'db' | 'clock' | 'brokerTokens' | 'resolveCredential'>;

/**
 * The broker check's authenticator: the shared bearer parsing and refusals, with a fast path for
 * `bkt_` tokens so that a warm check reads nothing from Postgres. Any other credential goes the
 * shared way (401, or 403 `credential_not_accepted`).
 */
export function brokerCheckCredentials(deps: TokenDeps): Authenticator<CheckingBroker> {
  return {
    kinds: ['broker'],
    async authenticate(head) {
      const token = bearerToken(head);
      if (!token.startsWith('bkt_')) {
        const principal = await deps.resolveCredential(token);
        if (!principal) throw unauthenticated();
        return { ...acceptOnly(principal, ['broker']), remembered: false };
      }
      if (!hasValidShape(token, 'bkt')) throw unauthenticated();
      const tokenHash = hashToken(token);
      const brokerId = deps.brokerTokens.get(tokenHash, deps.clock.now());
      if (brokerId) return { kind: 'broker', brokerId, tokenHash, remembered: true };
      return { ...(await verifyBroker(deps, tokenHash)), remembered: false };
    },
  };
}

/** Looks the token up in Postgres (and remembers it); 401 when it is unknown or revoked. */
export async function verifyBroker(deps: Pick<TokenDeps, 'db' | 'clock' | 'brokerTokens'>, tokenHash: string): Promise<BrokerPrincipal> {
  const found = await findBrokerByTokenHash(deps.db, tokenHash);
  if (!found) {
    deps.brokerTokens.forget(tokenHash);
    throw unauthenticated();
  }
  deps.brokerTokens.set(tokenHash, found.brokerId, deps.clock.now());
  return { kind: 'broker', ...found };
}
