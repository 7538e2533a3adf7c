import jwt from 'jsonwebtoken';
import type { Deps } from '../deps';
import { findBrokerByToken } from '../credentials/lookup';
import { hashToken } from '../credentials/tokens';
import { resolveCredential } from '../http/auth';
import { ApiError } from '../http/problem';
import type { CallPrincipal, TreeSnapshot } from './tree-facts';

/**
 * Credentials of a broker check, verified once per tree version and then remembered in the
 * tree's snapshot: deleting a runtime token or uninstalling an agent (touch 'agent'), or revoking
 * a broker's tokens (touch 'broker'), bumps the version of every tree they could reach, so the
 * next check verifies against Postgres again. Tokens are kept only as their SHA-256.
 */

/** The broker behind a bkt_ token, or null (the caller answers 401). */
export async function brokerOfToken(deps: Deps, snapshot: TreeSnapshot | undefined, token: string): Promise<string | null> {
  const key = `broker:${hashToken(token)}`;
  const cached = snapshot?.credentials.get(key);
  if (cached?.kind === 'broker') return cached.brokerId;
  const broker = await findBrokerByToken(deps.db, token);
  if (!broker) return null;
  snapshot?.remember(snapshot.credentials, key, { kind: 'broker', brokerId: broker.brokerId });
  return broker.brokerId;
}

export interface SubjectInput {
  subjectToken?: string;
  principal?: CallPrincipal;
}

/**
 * Who the call is for. Preferred: the caller's own bearer credential, forwarded by the broker
 * and verified here, so a broker cannot act for an identity it does not hold. A principal the
 * broker merely asserts is refused unless BROKER_TRUST_ASSERTED_PRINCIPAL is on.
 */
export async function principalOfCall(deps: Deps, snapshot: TreeSnapshot, input: SubjectInput, now: number): Promise<CallPrincipal> {
  if (input.principal) {
    if (!deps.config.BROKER_TRUST_ASSERTED_PRINCIPAL) {
      throw new ApiError('principal_assertion_refused', "forward the caller's own credential as subjectToken");
    }
    return input.principal;
  }
  const token = input.subjectToken ?? '';
  const key = `subject:${hashToken(token)}`;
  const cached = snapshot.credentials.get(key);
  if (cached?.kind === 'subject' && (cached.expiresAtMs === null || cached.expiresAtMs > now)) return cached.principal;

  const verified = await resolveCredential(deps, token);
  let principal: CallPrincipal;
  let expiresAtMs: number | null;
  if (verified?.kind === 'human') {
    principal = { kind: 'user', id: verified.userId };
    const claims = jwt.decode(token) as { exp?: number } | null;
    expiresAtMs = typeof claims?.exp === 'number' ? claims.exp * 1000 : now;
  } else if (verified?.kind === 'agent') {
    principal = { kind: 'agent', id: verified.agentId };
    const row = await deps.db('runtime_tokens').where('id', verified.tokenId).first<{ expires_at: Date | null }>('expires_at');
    expiresAtMs = row?.expires_at ? row.expires_at.getTime() : null;
  } else {
    // Unknown, expired, deleted, or a broker token: nobody to check the call for.
    throw new ApiError('subject_token_invalid');
  }
  snapshot.remember(snapshot.credentials, key, { kind: 'subject', principal, expiresAtMs });
  return principal;
}
