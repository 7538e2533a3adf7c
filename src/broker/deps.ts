import type { LocalTime } from '../kernel/local-time';
import type { Tracer } from '../kernel/trace';
import type { CallTrailWriter } from './call-trail';
import type { TallyWriter } from '../grants/tally-writer';
import type { ChainCache } from './chain';
import type { Clock } from '../kernel/clock';
import type { CredentialResolver } from '../credentials/authenticators';
import type { Database } from '../db/database';
import type { Logger } from '../kernel/log';
import type { PolicyEngine } from '../policy/engine';
import type { SlidingWindowBudget } from '../budget/sliding-window';
import type { TreeWindowsRebuilder } from '../budget/rebuild';
import type { TreeFactsCache } from './tree-facts';
import type { TreeInputMembers } from './policy-input';
import type { VerifiedBrokerTokens } from './verified-tokens';
import type { ApprovalArgsVault } from '../approvals/args-vault';
import type { LruCache } from '../cache/lru';
import type { MintedCredential, MintRequest } from '../github-apps/installation-tokens';
import type { ApprovalWebhooks } from '../approvals/requests';

/** The per-replica state of the broker check: caches, the budget script, the trail writer. */
export interface BrokerComponents {
  chains: ChainCache;
  trees: TreeFactsCache;
  budget: SlidingWindowBudget;
  /** Rebuilds a tree's windows from the call trail when Redis lost them. */
  windows: TreeWindowsRebuilder;
  trail: CallTrailWriter;
  /** The input members of each tree's facts, built once per facts object. */
  treeInputs: TreeInputMembers;
  brokerTokens: VerifiedBrokerTokens;
  /** Where each (connection, tool)'s credential comes from; null: nowhere. None of it ever changes. */
  credentialSources: LruCache<string, { app: string; installationId: string; permissions: Record<string, string> | null } | null>;
}

/** What the broker check and call outcomes use, and nothing more. */
export interface BrokerDeps extends BrokerComponents {
  db: Database;
  policy: PolicyEngine;
  log: Logger;
  clock: Clock;
  /** Verifies a forwarded subjectToken (the same look-ups as the API's own credentials). */
  resolveCredential: CredentialResolver;
  /** BROKER_TRUST_ASSERTED_PRINCIPAL: a fact for broker/check, which decides. */
  trustAssertedPrincipal: boolean;
  /** APPROVAL_TTL_MS: how long a human has to decide a call that waits for approval. */
  approvalTtlMs: number;
  /** Keeps a pending approval's arguments, masked and sealed, for its deciders. */
  approvalArgs: ApprovalArgsVault;
  /** Queues `approval.requested` for the pod's webhooks with the approval. */
  approvalWebhooks: ApprovalWebhooks;
  /** Times the check's stages (TRACE_STAGES), or does nothing. */
  tracer: Tracer;
  /** Installation tokens of the GitHub Apps of GITHUB_APPS, minted and reused. */
  tokens: { mint(request: MintRequest): Promise<MintedCredential> };
  /** Counts each recorded check into the trail's hourly tallies (the console's overview). */
  tallies: Pick<TallyWriter, 'count'>;
  /** now in POLICY_TIME_ZONE, for org rules about working hours. */
  localTime: (nowMs: number) => LocalTime;
}
