import type { BrokerComponents, BrokerDeps } from './deps';
import type { RedisClient } from '../budget/redis-client';
import { SlidingWindowBudget } from '../budget/sliding-window';
import type { Database } from '../db/database';
import { brokerCheckCredentials } from './authenticator';
import { VerifiedBrokerTokens } from './verified-tokens';
import { CallTrailWriter } from './call-trail';
import { ChainCache } from './chain';
import { checkCall } from './check';
import { recordOutcome } from './outcome';
import { TreeFactsCache } from './tree-facts';

export function createBrokerComponents(db: Database, redis: RedisClient, factMaxAgeMs: number): BrokerComponents {
  return {
    chains: new ChainCache(db),
    trees: new TreeFactsCache(db, factMaxAgeMs),
    budget: new SlidingWindowBudget(redis),
    trail: new CallTrailWriter(db),
    brokerTokens: new VerifiedBrokerTokens(factMaxAgeMs),
  };
}

/** The broker's surface (CONTRACT §5): the pre-call check and call outcomes. */
export function createBrokerService(deps: BrokerDeps) {
  return {
    check: checkCall.bind(null, deps),
    recordOutcome: recordOutcome.bind(null, deps),
    credentials: brokerCheckCredentials(deps),
    /** Resolves once every queued call record is written (graceful shutdown). */
    settle: () => deps.trail.settle(),
  };
}

export type BrokerService = ReturnType<typeof createBrokerService>;
