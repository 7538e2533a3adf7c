import { acceptOnly, bearerToken, unauthenticated, type CredentialResolver } from '../credentials/authenticators';
import { hashToken, hasValidShape } from '../credentials/tokens';
import type { Clock } from '../kernel/clock';
import type { Authenticator } from '../kernel/route';
import type { BrokerTokenReads, CheckingBroker } from './reads';

export type { CheckingBroker } from './reads';

/**
 * The broker check's authenticator: the shared bearer parsing and refusals, with `bkt_` tokens
 * found through the check's own look-up (`tokens`), which may answer from memory
 * (src/speedups/caches.ts) so that a warm check reads nothing from Postgres; such a token is
 * confirmed later, under the grant tree's facts or against Postgres. Any other credential goes
 * the shared way (401, or 403 `credential_not_accepted`).
 */
export function brokerCheckCredentials(deps: { resolveCredential: CredentialResolver; tokens: BrokerTokenReads; clock: Clock }) {
  const authenticator: Authenticator<CheckingBroker> = {
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
      const found = await deps.tokens.byHash(tokenHash, deps.clock.now());
      if (!found) throw unauthenticated();
      return { kind: 'broker', brokerId: found.brokerId, tokenHash, remembered: found.remembered };
    },
  };
  return authenticator;
}
