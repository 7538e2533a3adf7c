import jwt from 'jsonwebtoken';
import { hashToken } from '../credentials/tokens';
import { verifyBroker, type CheckingBroker } from './authenticator';
import type { BrokerDeps } from './deps';
import type { TreeSnapshot } from './tree-facts';
import type { CallPrincipal } from '../kernel/principals';

/**
 * Credentials of a broker check, verified once per tree version and then remembered in the
 * tree's snapshot: deleting a runtime token or uninstalling an agent (scope 'agent'), or revoking
 * a broker's tokens (scope 'broker'), stamps the version of every tree they could reach, so the
 * next check verifies against Postgres again. Tokens are kept only as their SHA-256.
 */

/**
 * Confirms the broker's token for one of its own trees: remembered under the tree's version, or
 * just looked up by the authenticator, or looked up now. A revoked token is a 401 here. A token is
 * remembered only in its own broker's trees, the ones a revocation of its tokens stamps; another
 * broker's grant never gets this far (check.ts answers it 404 after its own look-up).
 */
export async function confirmBroker(deps: BrokerDeps, snapshot: TreeSnapshot, broker: CheckingBroker): Promise<void> {
  const key = `broker:${broker.tokenHash}`;
  if (snapshot.credential(key)?.kind === 'broker') return;
  if (broker.remembered) await verifyBroker(deps, broker.tokenHash);
  snapshot.rememberCredential(key, { kind: 'broker', brokerId: broker.brokerId });
}

export interface SubjectInput {
  subjectToken?: string;
  principal?: CallPrincipal;
}

export interface CallSubject {
  /** Who the call is for; null when the forwarded subjectToken did not verify. */
  principal: CallPrincipal | null;
  source: 'subject_token' | 'asserted';
}

/**
 * Who the call is for. Preferred: the caller's own bearer credential, forwarded by the broker
 * and verified here, so a broker cannot act for an identity it does not hold. Whether an asserted
 * principal, or none, may go on is the policy's call (broker/check).
 */
export async function subjectOfCall(deps: BrokerDeps, snapshot: TreeSnapshot, input: SubjectInput, now: number): Promise<CallSubject> {
  if (input.principal) return { principal: input.principal, source: 'asserted' };
  const token = input.subjectToken ?? '';
  const key = `subject:${hashToken(token)}`;
  const cached = snapshot.credential(key);
  if (cached?.kind === 'subject' && (cached.expiresAtMs === null || cached.expiresAtMs > now)) {
    return { principal: cached.principal, source: 'subject_token' };
  }

  const verified = await deps.resolveCredential(token);
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
    return { principal: null, source: 'subject_token' };
  }
  snapshot.rememberCredential(key, { kind: 'subject', principal, expiresAtMs });
  return { principal, source: 'subject_token' };
}
