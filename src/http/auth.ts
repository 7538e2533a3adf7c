import type { Context } from 'koa';
import type { Deps } from '../deps';
import { findAgentByRuntimeToken, findBrokerByToken } from '../credentials/lookup';
import { ApiError } from './problem';

export type CredentialKind = 'human' | 'agent' | 'broker';

export type HumanPrincipal = { kind: 'human'; userId: string };
export type AgentPrincipal = { kind: 'agent'; agentId: string; podId: string; agentName: string; tokenId: string };
export type BrokerPrincipal = { kind: 'broker'; brokerId: string; tokenHash: string };
export type Principal = HumanPrincipal | AgentPrincipal | BrokerPrincipal;

/**
 * How a route learns who calls it. `kinds` is what the route documents as its security
 * requirements; `authenticate` answers the principal or throws 401 (no valid credential) or 403
 * `credential_not_accepted` (a valid credential of another kind).
 */
export interface Authenticator<A extends CredentialKind = CredentialKind> {
  readonly kinds: readonly A[];
  authenticate(ctx: Context, deps: Deps): Promise<Extract<Principal, { kind: A }>>;
}

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="grant-broker"' };

export function unauthenticated(detail = 'the credential is invalid, expired or revoked'): ApiError {
  return new ApiError('unauthenticated', detail, {}, CHALLENGE);
}

/**
 * The bearer token of the request. The scheme is case-insensitive (RFC 9110 §11.1); the token is
 * a b64token (RFC 6750 §2.1). Anything else is a 401 before any look-up.
 */
export function bearerToken(ctx: Context): string {
  const header = ctx.get('authorization');
  if (!header) throw unauthenticated('send Authorization: Bearer <token>');
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('the Authorization header is not a Bearer credential');
  return match[1];
}

/** Resolves any bearer credential (human JWT, `art_` runtime token, `bkt_` broker token). */
export async function resolveCredential(deps: Deps, token: string): Promise<Principal | null> {
  if (token.startsWith('art_')) {
    const agent = await findAgentByRuntimeToken(deps.db, token);
    return agent && { kind: 'agent', ...agent };
  }
  if (token.startsWith('bkt_')) {
    const broker = await findBrokerByToken(deps.db, token);
    return broker && { kind: 'broker', ...broker };
  }
  const human = await deps.verifyHumanJwt(token);
  return human && { kind: 'human', ...human };
}

export function acceptOnly<A extends CredentialKind>(principal: Principal, kinds: readonly A[]): Extract<Principal, { kind: A }> {
  if (!(kinds as readonly CredentialKind[]).includes(principal.kind)) {
    throw new ApiError('credential_not_accepted', `this endpoint accepts: ${kinds.join(', ')}`);
  }
  return principal as Extract<Principal, { kind: A }>;
}

/** The default authenticator: every credential is looked up on every request. */
export function credentials<A extends CredentialKind>(...kinds: A[]): Authenticator<A> {
  return {
    kinds,
    async authenticate(ctx, deps) {
      const principal = await resolveCredential(deps, bearerToken(ctx));
      if (!principal) throw unauthenticated();
      return acceptOnly(principal, kinds);
    },
  };
}
