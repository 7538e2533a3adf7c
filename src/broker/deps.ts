import type { LocalTime } from '../kernel/local-time';
import type { Tracer } from '../kernel/trace';
import type { CallTrailWriter } from '../trail/writer';
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
import type { LruCache } from '../cache/lru';
import type { MintedCredential, MintRequest } from '../github-apps/installation-tokens';
import type { ApprovalClaim as Claim, CallApprovals } from '../approvals/requests';
import type { NewCallRecord } from '../trail/writer';

/** An approval taken for a call, held until the call's record commits with it (approvals/requests.ts). */
export type ApprovalClaim = Claim<NewCallRecord>;
export type { ApprovalFact, ApprovalRequest } from '../approvals/requests';

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
  /**
   * Approvals as the check uses them: the one a re-sent call brings, taken once with the call's
   * record, or a new one asked for with it. A port: composition.ts fills it from the approvals
   * domain, with the trail's writer of a record inside the approval's transaction.
   */
  approvals: CallApprovals<NewCallRecord>;
  /** Times the check's stages (TRACE_STAGES), or does nothing. */
  tracer: Tracer;
  /** Installation tokens of the GitHub Apps of GITHUB_APPS, minted and reused. */
  tokens: { mint(request: MintRequest): Promise<MintedCredential> };
  /** now in POLICY_TIME_ZONE, for org rules about working hours. */
  localTime: (nowMs: number) => LocalTime;
}
