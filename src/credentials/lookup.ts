import type { Database } from '../db/database';
import { findLiveBrokerToken } from './repository';
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

/**
 * What a runtime token look-up reads (a port: credentials/ knows no domain; composition.ts fills
 * it from registry/repository.ts, which owns runtime tokens and agents).
 */
export interface RuntimeTokenSource {
  /** The unexpired token with this hash and its installed agent, at `now`; undefined when there is none. */
  findLive(tokenHash: string, now: Date): Promise<(AgentIdentity & { tokenHash: string }) | undefined>;
  /** Records a use of the token (a hint for humans, written at most once a minute). */
  markUsed(tokenId: string): Promise<void>;
}

/**
 * Finds the installed agent behind a runtime token. The database is asked every time, so a
 * deleted token or an uninstalled agent is refused on the very next request.
 */
export async function findAgentByRuntimeToken(tokens: RuntimeTokenSource, token: string, nowMs: number): Promise<AgentIdentity | null> {
  if (!hasValidShape(token, 'art')) return null;
  const hash = hashToken(token);
  const row = await tokens.findLive(hash, new Date(nowMs));
  if (!row || !constantTimeEqual(row.tokenHash, hash)) return null;
  void tokens.markUsed(row.tokenId).catch(() => undefined);
  return { agentId: row.agentId, podId: row.podId, agentName: row.agentName, tokenId: row.tokenId };
}

export async function findBrokerByToken(db: Database, token: string): Promise<BrokerIdentity | null> {
  if (!hasValidShape(token, 'bkt')) return null;
  return findBrokerByTokenHash(db, hashToken(token));
}

/** The broker whose unrevoked token has this SHA-256, or null. */
export async function findBrokerByTokenHash(db: Database, hash: string): Promise<BrokerIdentity | null> {
  const row = await findLiveBrokerToken(db, hash);
  if (!row || !constantTimeEqual(row.token_hash, hash)) return null;
  return { brokerId: row.broker_id, tokenHash: hash };
}
