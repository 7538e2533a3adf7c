import type { Redis } from 'ioredis';
import type { Invalidation } from './cache/invalidation';
import type { Config } from './config';
import type { Database } from './db/database';
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
  invalidation: Invalidation;
}
