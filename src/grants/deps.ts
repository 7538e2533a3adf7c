import type { Knex } from 'knex';
import type { CacheInvalidation } from '../cache/invalidation';
import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
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
}
