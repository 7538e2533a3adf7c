import type { Redis } from 'ioredis';
import type { RateLimit } from './budget/rate-limit';
import type { CacheInvalidation } from './cache/invalidation';
import type { BrokerComponents } from './broker/check';
import type { Config } from './config';
import type { Database } from './db/database';
import type { EventWaker } from './events/waker';
import type { HumanJwtVerifier } from './credentials/human-jwt';
import type { Logger } from './log';
import type { PolicyEngine } from './policy/engine';

/** Everything a request handler may reach; built once in main.ts (or per test app). */
export interface Deps {
  config: Config;
  db: Database;
  redis: Redis;
  policy: PolicyEngine;
  log: Logger;
  verifyHumanJwt: HumanJwtVerifier;
  invalidation: CacheInvalidation;
  /** The process's one LISTEN connection that wakes long polls of agent events. */
  eventWaker: EventWaker;
  /** At most ATTENUATION_RATE_LIMIT attenuations per agent per ATTENUATION_RATE_WINDOW_MS. */
  attenuationLimit: RateLimit;
  /** Per-replica caches, budget script and call-trail writer of the broker check. */
  broker: BrokerComponents;
}
