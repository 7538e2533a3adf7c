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
}
