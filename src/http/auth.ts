import type { Context } from 'koa';
import type { Deps } from '../deps';
import { findAgentByRuntimeToken, findBrokerByToken } from '../credentials/lookup';
import { ApiError } from './problem';

export type CredentialKind = 'human' | 'agent' | 'broker';

export type HumanPrincipal = { kind: 'human'; userId: string };
export type AgentPrincipal = { kind: 'agent'; agentId: string; podId: string; agentName: string; tokenId: string };
export type BrokerPrincipal = { kind: 'broker'; brokerId: string };
export type Principal = HumanPrincipal | AgentPrincipal | BrokerPrincipal;

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="grant-broker"' };

function unauthenticated(detail: string): ApiError {
  return new ApiError('unauthenticated', detail, {}, CHALLENGE);
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

/**
 * 401 for a missing, malformed, expired, deleted or unknown credential; 403
 * `credential_not_accepted` for a valid credential of a kind this endpoint does not take.
 */
export async function authenticate(ctx: Context, deps: Deps, accepted: readonly CredentialKind[]): Promise<Principal> {
  const header = ctx.get('authorization');
  if (!header) throw unauthenticated('send Authorization: Bearer <token>');
  // The scheme is case-insensitive (RFC 9110 §11.1); the token is a b64token (RFC 6750).
  const match = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('the Authorization header is not a Bearer credential');
  const principal = await resolveCredential(deps, match[1]);
  if (!principal) throw unauthenticated('the credential is invalid, expired or revoked');
  if (!accepted.includes(principal.kind)) {
    throw new ApiError('credential_not_accepted', `this endpoint accepts: ${accepted.join(', ')}`);
  }
  return principal;
}
