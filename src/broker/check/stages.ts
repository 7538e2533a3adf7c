import type { TreeSession } from '../../budget/sliding-window';
import type { Explanation } from '../../kernel/decisions/explanation';
import type { CallPrincipal } from '../../kernel/principals';
import type { CheckingBroker } from '../authenticator';
import type { ApprovalClaim, ApprovalFact } from '../deps';
import type { Chain } from '../reads';
import type { CallSubject, SubjectInput } from '../policy-input';
import type { MutableFacts } from '../tree-facts';

export type { CallSubject, SubjectInput } from '../policy-input';

/**
 * The hand-offs of the broker check's stages, and nothing else: resolve (reads only) → decide
 * (pure) → charge (the first side effect) → settle (the answer, the approval and the record).
 */

export interface CheckRequest extends SubjectInput {
  grantId: string;
  tool: string;
  args: Record<string, unknown>;
  /** A re-sent check: the approval a human gave this very call. */
  approvalId?: string;
  /** On allow, mint an installation token for the call (the connection's GitHub App). */
  credential?: boolean;
  /**
   * The principal the caller says the forwarded token is for (AuthZEN's `subject`): refused,
   * before anything is recorded, when the token verifies as anyone else. It never stands in for
   * the token: the token alone says who calls.
   */
  namedSubject?: CallPrincipal;
}

export interface CheckAnswer {
  decision: 'allow' | 'deny' | 'approval_required';
  callId: string;
  reason: string;
  approvalId?: string;
  /** With approval_required: the approval, and its page in the console where a person decides it. */
  approval?: { id: string; expiresAt: string; consoleUrl: string };
  /** The message of the org rule whose reason this is. */
  message?: string;
  /** A refusal (or an approval asked for): why, at which level of the chain, what would change it. */
  explanation?: Explanation;
  retryAfterMs?: number;
  budget: { remaining: number; resetMs: number };
  /** The call's record in the trail's Merkle tree: its leaf, to prove against a signed checkpoint. */
  receipt?: { leafIndex: number };
  /** With `credential: true`, on allow: the token for this call alone. */
  credential?: { token: string; expiresAt: string; repositories: string[]; permissions: Record<string, string> };
  /** The version of the grant's tree the check read its facts under (opaque; changes with any change to the tree). */
  grantVersion?: string;
}

/** What a check knows before it reads anything: made once, whatever the attempts. */
export interface Start {
  broker: CheckingBroker;
  request: CheckRequest;
  callId: string;
  /** sha256 of the canonical JSON of `args`: what the record keeps and an approval binds to. */
  argsDigest: string;
  requestedAt: Date;
}

export type { ApprovalClaim, ApprovalFact } from '../deps';

/** Everything the policy is asked about, read under one tree version, at one instant. */
export interface Resolved extends Start {
  /** The clock, read once per attempt: the policy's `now_ms` and the approval's use. */
  nowMs: number;
  chain: Chain;
  /** The tree's version every fact was read under; absent for another broker's grant, of which nothing is looked at. */
  treeVersion?: string;
  subject: CallSubject;
  facts: MutableFacts;
  approval?: ApprovalFact;
  /** The tree's session the decision reads (labels and calls per tool, across replicas). */
  session: TreeSession;
}

/** What broker/check decided about the call (a refusal of the request itself is thrown instead). */
export type Verdict =
  /** `labels`: what enforced org rules label the call with, kept on the tree if it is charged. */
  (
    | { kind: 'allow'; decisionId: string; principal: CallPrincipal; spendsApproval: boolean; labels: readonly string[] }
    | { kind: 'deny'; decisionId: string; principal: CallPrincipal; reason: string; message?: string; explanation?: Explanation }
    /** `checkInput`: what the policy's mask rule judges when the approval keeps the arguments. */
    | { kind: 'ask'; decisionId: string; principal: CallPrincipal; explanation?: Explanation; checkInput: object }
  ) & {
    /** An enforced rule read the tool's count: the charge holds only if the tree's count is the one seen. */
    exactCalls?: boolean;
  };

/**
 * What the charge stage did: took a unit, found none, only looked, found the facts stale (resolve
 * again) or the tree's labels changed since the decision (decide again on `session`).
 */
export type Charged =
  | { kind: 'stale'; treeVersion: string; session?: TreeSession }
  | { kind: 'relabelled'; session: TreeSession }
  | { kind: 'taken'; atMs: number; remaining: number; resetMs: number; claim?: ApprovalClaim }
  /** `fullLevels`: indices in the chain (the grant first) of the full windows. */
  | { kind: 'exhausted'; retryAfterMs: number; resetMs: number; fullLevels: number[] }
  /** The call would take the tree past its labels cap: nothing taken. */
  | { kind: 'label_limit'; resetMs: number }
  | { kind: 'probed'; remaining: number; resetMs: number }
  /** Another re-send used the approval first: nothing taken. */
  | { kind: 'approval_used'; remaining: number; resetMs: number };

export type Settled = Exclude<Charged, { kind: 'stale' } | { kind: 'relabelled' }>;
