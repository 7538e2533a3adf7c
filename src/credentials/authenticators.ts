import { ApiError } from '../kernel/errors';
import type { AgentPrincipal, CredentialKind, Principal } from '../kernel/principals';
import type { Authenticator, CredentialAuthenticators, RequestHead } from '../kernel/route';
import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import type { HumanJwtVerifier } from './human-jwt';
import { findAgentByRuntimeToken, findBrokerByToken, type RuntimeTokenSource } from './lookup';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="grant-broker"' };

export function unauthenticated(detail = 'the credential is invalid, expired or revoked'): ApiError {
  return new ApiError('unauthenticated', detail, {}, CHALLENGE);
}

/**
 * The bearer token of a request. The scheme is case-insensitive (RFC 9110 §11.1); the token is a
 * b64token (RFC 6750 §2.1). Anything else is a 401 before any look-up.
 */
export function bearerToken(head: RequestHead): string {
  if (!head.authorization) throw unauthenticated('send Authorization: Bearer <token>');
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(head.authorization);
  if (!match?.[1]) throw unauthenticated('the Authorization header is not a Bearer credential');
  return match[1];
}

export function acceptOnly<K extends CredentialKind>(principal: Principal, kinds: readonly K[]): Extract<Principal, { kind: K }> {
  if (!(kinds as readonly CredentialKind[]).includes(principal.kind)) {
    throw new ApiError('credential_not_accepted', `this endpoint accepts: ${kinds.join(', ')}`);
  }
  return principal as Extract<Principal, { kind: K }>;
}

export interface CredentialLookups {
  /** Broker tokens (credentials/repository.ts). */
  db: Database;
  /** Runtime tokens, which the agent registry owns. */
  runtimeTokens: RuntimeTokenSource;
  verifyHumanJwt: HumanJwtVerifier;
  /** A runtime token's expiry is judged on the service's clock. */
  clock: Clock;
}

export type CredentialResolver = (token: string) => Promise<Principal | null>;

/** Resolves any bearer credential (human JWT, `art_` runtime token, `bkt_` broker token). */
export function credentialResolver({ db, runtimeTokens, verifyHumanJwt, clock }: CredentialLookups): CredentialResolver {
  return async (token) => {
    if (token.startsWith('art_')) {
      const agent = await findAgentByRuntimeToken(runtimeTokens, token, clock.now());
      return agent && { kind: 'agent', ...agent };
    }
    if (token.startsWith('bkt_')) {
      const broker = await findBrokerByToken(db, token);
      return broker && { kind: 'broker', ...broker };
    }
    const human = await verifyHumanJwt(token);
    return human && { kind: 'human', ...human };
  };
}

/**
 * An MCP host's access token (CONTRACT §20) as the agent it acts for, bound to its one grant
 * (`onlyGrantId`); undefined when the token is not one, null when it is one that does not verify.
 */
export type HostTokenResolver = (token: string) => Promise<AgentPrincipal | null | undefined>;

/**
 * The usual authenticators: every credential looked up on every request. A host's access token is
 * taken only where a route asks for `grantHolders()`; everywhere else it is an unknown credential.
 */
export function credentialAuthenticators(resolve: CredentialResolver, resolveHostToken: HostTokenResolver): CredentialAuthenticators {
  const credentials = <K extends CredentialKind>(...kinds: K[]): Authenticator<Extract<Principal, { kind: K }>> => ({
    kinds,
    async authenticate(head) {
      const principal = await resolve(bearerToken(head));
      if (!principal) throw unauthenticated();
      return acceptOnly(principal, kinds);
    },
  });
  return {
    credentials,
    grantHolders() {
      const plain = credentials('human', 'agent');
      return {
        kinds: plain.kinds,
        async authenticate(head) {
          const host = await resolveHostToken(bearerToken(head));
          if (host === undefined) return plain.authenticate(head);
          if (!host) throw unauthenticated();
          return host;
        },
      };
    },
  };
}
