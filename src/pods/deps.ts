import type { CacheInvalidation } from '../cache/invalidation';
import type { Clock } from '../kernel/clock';
import type { Database } from '../db/database';
import type { PolicyEngine } from '../policy/engine';

/** What the pods domain uses, and nothing more. */
export interface PodsDeps {
  db: Database;
  policy: PolicyEngine;
  invalidation: CacheInvalidation;
  clock: Clock;
}
