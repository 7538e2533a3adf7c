import type { ApprovalClaim as Claim, CallApprovals } from '../approvals/requests';
import type { TallyWriter } from '../trail/tally-writer';
import type { SlidingWindowBudget } from '../budget/sliding-window';
import type { CredentialResolver } from '../credentials/authenticators';
import type { MintedCredential, MintRequest } from '../github-apps/installation-tokens';
import type { Clock } from '../kernel/clock';
import type { LocalTime } from '../kernel/local-time';
import type { Logger } from '../kernel/log';
import type { Tracer } from '../kernel/trace';
import type { PolicyEngine } from '../policy/engine';
import type { NewCallRecord, TrailWriter } from '../trail/writer';
import type { TreeInputs } from './policy-input';
import type { BrokerTokenReads, CheckReads } from './reads';

/** An approval taken for a call, held until the call's record commits with it (approvals/requests.ts). */
export type ApprovalClaim = Claim<NewCallRecord>;
export type { ApprovalRequest } from '../approvals/requests';
export type { TalliedCheck } from '../trail/tally-writer';
export type { NewCallRecord } from '../trail/writer';
export type { ApprovalFact } from './reads';

/**
 * What the broker check uses, and nothing more. Every read goes through `reads`, every write
 * through `budget`, `trail` and `approvals`: no database handle. composition.ts builds them,
 * plain or through the speed-ups (src/speedups/), which decorate these same interfaces.
 */
export interface BrokerDeps {
  reads: CheckReads;
  /** How the check's authenticator finds a `bkt_` token's broker. */
  brokerTokens: BrokerTokenReads;
  /** The budget script (Redis): consume or probe, refund, a tree's state. */
  budget: Pick<SlidingWindowBudget, 'run' | 'refund' | 'treeState'>;
  /** Rebuilds a tree's windows from the call trail when Redis lost them; answers its version. */
  rebuild: (rootId: string) => Promise<string>;
  /** Writes a check's call record, durable before the answer leaves. */
  trail: TrailWriter;
  /** The input members of each tree's facts. */
  treeInputs: TreeInputs;
  /**
   * Approvals as the check uses them: the one a re-sent call brings, taken once with the call's
   * record, or a new one asked for with it. A port: composition.ts fills it from the approvals
   * domain, with the trail's writer of a record inside the approval's transaction.
   */
  approvals: CallApprovals<NewCallRecord>;
  policy: PolicyEngine;
  log: Logger;
  clock: Clock;
  /** Verifies a forwarded subjectToken (the same look-ups as the API's own credentials). */
  resolveCredential: CredentialResolver;
  /** BROKER_TRUST_ASSERTED_PRINCIPAL: a fact for broker/check, which decides. */
  trustAssertedPrincipal: boolean;
  /** APPROVAL_TTL_MS: how long a human has to decide a call that waits for approval. */
  approvalTtlMs: number;
  /** Times the check's stages (TRACE_STAGES), or does nothing. */
  tracer: Tracer;
  /** Installation tokens of the GitHub Apps of GITHUB_APPS, minted and reused. */
  tokens: { mint(request: MintRequest): Promise<MintedCredential> };
  /** Counts each recorded check into the trail's hourly tallies (the console's overview). */
  tallies: Pick<TallyWriter, 'count'>;
  /** now in POLICY_TIME_ZONE, for org rules about working hours. */
  localTime: (nowMs: number) => LocalTime;
}
