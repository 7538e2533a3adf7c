import type { Redis } from 'ioredis';
import type { Config } from '../config';
import type { Database } from '../db/database';
import { SlidingWindowBudget } from '../budget/sliding-window';
import { ChainCache } from './chain';
import { CallTrailWriter } from './call-trail';
import type { BrokerComponents } from './check';
import { TreeFactsCache } from './tree-facts';
import { VerifiedBrokerTokens } from './authenticator';

/** The per-replica state of the broker check: caches, the budget script and the trail writer. */
export function createBrokerComponents(config: Config, db: Database, redis: Redis): BrokerComponents {
  return {
    chains: new ChainCache(db),
    trees: new TreeFactsCache(db, config.BROKER_FACT_MAX_AGE_MS),
    budget: new SlidingWindowBudget(redis),
    trail: new CallTrailWriter(db),
    brokerTokens: new VerifiedBrokerTokens(config.BROKER_FACT_MAX_AGE_MS),
  };
}
