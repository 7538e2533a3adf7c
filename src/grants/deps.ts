import type { Knex } from 'knex';
import type { CacheInvalidation } from '../cache/invalidation';
import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { ConnectionFact } from '../kernel/decisions/catalogue';
import type { PolicyEngine } from '../policy/engine';
import type { RateLimit } from '../budget/rate-limit';

/** What the grants domain uses, and nothing more. */
export interface GrantsDeps {
  db: Database;
  policy: PolicyEngine;
  invalidation: CacheInvalidation;
  clock: Clock;
  /** At most so many attenuation requests per agent per window. */
  attenuationLimit: RateLimit;
  limits: { maxDelegationDepth: number; maxLiveChildrenPerGrant: number };
  /**
   * Ends the open approvals of revoked grants, in the revoke's transaction. A port:
   * approvals/repository.ts owns the table and src/approvals builds on this domain, so
   * composition.ts fills it.
   */
  expireApprovals: (trx: Knex.Transaction, grantIds: readonly string[], revokedAt: Date) => Promise<void>;
  /**
   * Drops a revoked tree's session (its labels and calls per tool) from Redis: a revoked root
   * never allows again, and its keys would otherwise wait for their TTL. composition.ts fills it.
   */
  forgetTreeSession: (rootId: string) => Promise<void>;
  /** What grants read of connections, pods and agents. */
  lookups: GrantsLookups;
}

type Queryable = Database | Knex.Transaction;

/**
 * What the grants domain reads of connections, pods and installed agents: a port, filled in
 * composition.ts (src/domain-ports.ts) from those domains. Each read takes the caller's
 * transaction where its answer must hold with the grant's.
 */
export interface GrantsLookups {
  /** Connections' facts by id, each with its enabled tools; unknown ids are absent. */
  connectionFacts(db: Queryable, ids: readonly string[]): Promise<Map<string, ConnectionFact>>;
  /** A connection a root grant is made on: its fact, and the installation and broker its grants go to. */
  grantableConnection(db: Queryable, id: string): Promise<{ fact: ConnectionFact; installationId: string; brokerId: string } | undefined>;
  /** Whether a pod exists. */
  podExists(db: Queryable, podId: string): Promise<boolean>;
  /** Current members of a pod, humans and installed agents: what effective audiences are made of. */
  memberIds(db: Queryable, podId: string): Promise<string[]>;
  /** Installed agents of a pod: the recipients of its grants' events. */
  agentIds(db: Queryable, podId: string): Promise<string[]>;
  /** An installed agent (a seat); undefined once it is uninstalled. */
  agent(db: Queryable, agentId: string): Promise<{ id: string; pod_id: string; desired_state: 'running' | 'stopped' } | undefined>;
}
