import type { CallApprovals } from './approvals/requests';
import type { BrokerDeps } from './broker/deps';
import { plainBrokerTokens, plainCheckReads, type CheckSources } from './broker/reads';
import { rebuildTreeWindows, type TreeWindowsSource } from './budget/rebuild';
import { DEFAULT_SESSION_SHAPE, DEFAULT_WINDOW_SHAPE, SlidingWindowBudget, UNKNOWN_SESSION } from './budget/sliding-window';
import type { Config } from './config';
import { credentialSourceOf } from './connections/facts';
import type { CredentialResolver } from './credentials/authenticators';
import { findBrokerByTokenHash } from './credentials/lookup';
import type { Database } from './db/database';
import { loadChainLinks } from './grants/facts';
import type { Clock } from './kernel/clock';
import type { RedisClient } from './redis/client';
import type { SpeedUps } from './speedups';
import { insertCallRecords } from './trail/repositories/call-record-inserts';
import type { PendingCalls } from './trail/pending-calls';
import type { NewCallRecord } from './trail/writer';

/**
 * The broker check's parts, wired: its plain reads filled from the repositories of the domains
 * that own them (grants' chains, credentials' broker tokens, connections' credential sources, the
 * approvals, the budget's Redis state), then handed to the speed-ups, which decorate them or, with
 * SPEEDUPS=off, hand them back as they are. Part of the composition root.
 */
export function checkParts(input: {
  config: Pick<Config, 'BROKER_FACT_MAX_AGE_MS' | 'SESSION_LABEL_TTL_MS' | 'TRAIL_TREE'>;
  db: Database;
  redis: RedisClient;
  clock: Clock;
  speedUps: SpeedUps;
  /** What the trail remembers of the records it writes pending (shared with its outcome batches). */
  pendingCalls: PendingCalls;
  resolveCredential: CredentialResolver;
  /** MCP hosts' access tokens (src/oauth/access-tokens.ts). */
  verifyAccessToken: CheckSources['verifyAccessToken'];
  approvals: CallApprovals<NewCallRecord>;
  /** What a rebuild of a tree's windows reads of the grants and the trail. */
  treeWindows: TreeWindowsSource;
}): Pick<BrokerDeps, 'reads' | 'brokerTokens' | 'budget' | 'rebuild' | 'trail' | 'treeInputs'> {
  const { config, db, speedUps } = input;
  const budget = new SlidingWindowBudget(input.redis, DEFAULT_WINDOW_SHAPE, {
    ...DEFAULT_SESSION_SHAPE,
    labelTtlMs: config.SESSION_LABEL_TTL_MS,
  });
  const rebuild = speedUps.singleFlight((rootId: string) => rebuildTreeWindows(input.treeWindows, budget, rootId));
  const sources: CheckSources = {
    db,
    clock: input.clock,
    chainLinks: (grantId) => loadChainLinks(db, grantId),
    approvalOf: (approvalId) => input.approvals.factOf(approvalId),
    openApprovalOf: (call) => input.approvals.openFactOf(call),
    brokerOfToken: async (tokenHash) => (await findBrokerByTokenHash(db, tokenHash))?.brokerId ?? null,
    // A tree Redis lost (or a new one) is rebuilt first, then read again: its session is what the rebuild left.
    async treeState(rootId) {
      const state = await budget.treeState(rootId);
      if (state) return state;
      const version = await rebuild(rootId);
      return (await budget.treeState(rootId)) ?? { version, session: UNKNOWN_SESSION };
    },
    resolveCredential: input.resolveCredential,
    verifyAccessToken: input.verifyAccessToken,
    credentialSourceOf: async (connectionId, tool) => (await credentialSourceOf(db, connectionId, tool)) ?? null,
  };
  const brokerTokens = speedUps.brokerTokens(plainBrokerTokens(sources), config.BROKER_FACT_MAX_AGE_MS);
  const check = speedUps.checkReads(plainCheckReads(sources, brokerTokens), budget, { factMaxAgeMs: config.BROKER_FACT_MAX_AGE_MS });
  const shapes = speedUps.shapeMemo();
  return {
    reads: check.reads,
    brokerTokens,
    budget: check.budget,
    rebuild,
    trail: speedUps.trailWriter(input.pendingCalls.insert((rows) => insertCallRecords(db, rows, shapes, config.TRAIL_TREE === 'on'))),
    treeInputs: speedUps.treeInputs(),
  };
}
