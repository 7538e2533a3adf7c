import type { Database } from '../db/database';
import { constantTimeEqual, hashToken, hasValidShape } from './tokens';

export interface AgentIdentity {
  agentId: string;
  podId: string;
  agentName: string;
  tokenId: string;
}

export interface BrokerIdentity {
  brokerId: string;
  /** SHA-256 of the token: what caches key the verified credential by (never the token). */
  tokenHash: string;
}

const LAST_USED_RESOLUTION = "interval '1 minute'";

/**
 * Finds the installed agent behind a runtime token. The database is asked every time, so a
 * deleted token or an uninstalled agent is refused on the very next request.
 */
export async function findAgentByRuntimeToken(db: Database, token: string, nowMs: number): Promise<AgentIdentity | null> {
  if (!hasValidShape(token, 'art')) return null;
  const hash = hashToken(token);
  const row = await db('runtime_tokens as t')
    .join('agents as a', 'a.id', 't.agent_id')
    .where('t.token_hash', hash)
    .andWhere((q) => q.whereNull('t.expires_at').orWhere('t.expires_at', '>', new Date(nowMs)))
    .first('t.id as tokenId', 't.token_hash as tokenHash', 'a.id as agentId', 'a.pod_id as podId', 'a.name as agentName');
  if (!row || !constantTimeEqual(row.tokenHash, hash)) return null;
  // lastUsedAt is a hint for humans; one write a minute per token is plenty.
  void db('runtime_tokens')
    .where('id', row.tokenId)
    .andWhere((q) => q.whereNull('last_used_at').orWhereRaw(`last_used_at < now() - ${LAST_USED_RESOLUTION}`))
    .update({ last_used_at: db.fn.now() })
    .catch(() => undefined);
  return { agentId: row.agentId, podId: row.podId, agentName: row.agentName, tokenId: row.tokenId };
}

export async function findBrokerByToken(db: Database, token: string): Promise<BrokerIdentity | null> {
  if (!hasValidShape(token, 'bkt')) return null;
  return findBrokerByTokenHash(db, hashToken(token));
}

/** The broker whose unrevoked token has this SHA-256, or null. */
export async function findBrokerByTokenHash(db: Database, hash: string): Promise<BrokerIdentity | null> {
  const row = await db('broker_tokens').where({ token_hash: hash }).whereNull('revoked_at').first('broker_id', 'token_hash');
  if (!row || !constantTimeEqual(row.token_hash, hash)) return null;
  return { brokerId: row.broker_id, tokenHash: hash };
}
