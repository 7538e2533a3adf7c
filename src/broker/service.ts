import type { BrokerComponents, BrokerDeps } from './deps';
import { LruCache } from '../cache/lru';
import type { RedisClient } from '../budget/redis-client';
import { TreeWindowsRebuilder, type TreeWindowsSource } from '../budget/rebuild';
import { DEFAULT_SESSION_SHAPE, DEFAULT_WINDOW_SHAPE, SlidingWindowBudget, UNKNOWN_SESSION } from '../budget/sliding-window';
import type { Database } from '../db/database';
import { brokerCheckCredentials } from './authenticator';
import { VerifiedBrokerTokens } from './verified-tokens';
import { CallTrailWriter } from '../trail/writer';
import { ChainCache } from './chain';
import { checkCall } from './check';
import { TreeFactsCache } from './tree-facts';
import { TreeInputMembers } from './policy-input';

/**
 * The per-replica state of the check. A tree's version is read from Redis before any of its facts
 * are; a tree Redis lost has its windows rebuilt from the call trail first, and gets a version.
 */
export function createBrokerComponents(
  db: Database,
  redis: RedisClient,
  treeWindows: TreeWindowsSource,
  factMaxAgeMs: number,
  labelTtlMs = DEFAULT_SESSION_SHAPE.labelTtlMs,
): BrokerComponents {
  const budget = new SlidingWindowBudget(redis, DEFAULT_WINDOW_SHAPE, { ...DEFAULT_SESSION_SHAPE, labelTtlMs });
  const windows = new TreeWindowsRebuilder(treeWindows, budget);
  // A tree Redis lost (or a new one) is rebuilt first, then read again: its session is what the
  // rebuild left.
  const stateOf = async (rootId: string) => {
    const state = await budget.treeState(rootId);
    if (state) return state;
    const version = await windows.rebuild(rootId);
    return (await budget.treeState(rootId)) ?? { version, session: UNKNOWN_SESSION };
  };
  return {
    chains: new ChainCache(db),
    trees: new TreeFactsCache(stateOf, factMaxAgeMs),
    budget,
    windows,
    trail: new CallTrailWriter(db),
    treeInputs: new TreeInputMembers(),
    brokerTokens: new VerifiedBrokerTokens(factMaxAgeMs),
    credentialSources: new LruCache(10_000),
  };
}

/** The broker's surface: the pre-call check. */
export function createBrokerService(deps: BrokerDeps) {
  return {
    check: checkCall.bind(null, deps),
    credentials: brokerCheckCredentials(deps),
    /** Resolves once every queued call record is written (graceful shutdown). */
    settle: () => deps.trail.settle(),
  };
}

export type BrokerService = ReturnType<typeof createBrokerService>;
