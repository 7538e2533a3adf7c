import { LruCache } from '../cache/lru';
import { UNKNOWN_SESSION, type TreeSession } from '../budget/sliding-window';
import type { ToolResourcePointers } from '../connections/facts';
import type { ConnectionFact } from '../grants/facts';
import type { CallPrincipal } from '../kernel/principals';

/** What can change about a call's chain: exactly what the broker/check policy needs besides the chain. */
export interface MutableFacts {
  revokedIds: string[];
  connection: ConnectionFact;
  /** Resource pointers of the connection's tools that declare them, by tool name. */
  toolResources: Record<string, ToolResourcePointers>;
  /** Pods of the chain's targets the principal is a current member of. */
  memberOf: string[];
  /** desired_state of an agent principal; null for a user or an agent that is gone. */
  desiredState: 'running' | 'stopped' | null;
}

/** A forwarded subject token verified under the tree's version (a token deletion bumps it). */
export interface RememberedSubject {
  principal: CallPrincipal;
  expiresAtMs: number | null;
}

/** What one check may find remembered: its broker's token, its subject, and its facts. */
export interface CallMemoryKeys {
  brokerTokenHash: string;
  /** null for a principal the broker asserts: nothing to verify. */
  subjectTokenHash: string | null;
  grantId: string;
}

export interface Recalled {
  brokerConfirmed: boolean;
  subject?: RememberedSubject;
  facts?: MutableFacts;
}

const ENTRIES_PER_TREE = 2_000;

/** A call whose subject did not verify is refused by the policy; its facts are moot. */
export const NO_PRINCIPAL_FACTS: MutableFacts = Object.freeze({
  revokedIds: [],
  connection: { id: '', owner_id: '', kind: '', status: 'disconnected' as const, tools: {} },
  toolResources: {},
  memberOf: [],
  desiredState: null,
});

/**
 * The cached mutable facts of one grant tree, valid while the tree's version key in Redis still
 * holds `version` (the budget script checks it on every call). Everything in here was loaded
 * after `version` was read, so it is at least as fresh as that version.
 */
/** What a check verified and read under a tree's version. */
export interface Learned {
  subject?: RememberedSubject;
  principal: CallPrincipal | null;
  facts: MutableFacts;
  /** The distinct pods of the chain's targets. */
  podCount: number;
}

export class TreeSnapshot {
  private readonly brokers = new Set<string>();
  private readonly subjects = new Map<string, RememberedSubject>();
  private readonly facts = new Map<string, MutableFacts>();

  constructor(
    readonly version: string,
    readonly loadedAt: number,
    /** The tree's session as the budget script last returned it (every charge renews it). */
    public session: TreeSession = UNKNOWN_SESSION,
  ) {}

  /** What this tree's version already vouches for; a subject past its token's expiry is not. */
  recall(keys: CallMemoryKeys, asserted: CallPrincipal | undefined, now: number): Recalled {
    const remembered = keys.subjectTokenHash === null ? undefined : this.subjects.get(keys.subjectTokenHash);
    const subject = remembered && (remembered.expiresAtMs === null || remembered.expiresAtMs > now) ? remembered : undefined;
    const principal = asserted ?? subject?.principal;
    return {
      brokerConfirmed: this.brokers.has(keys.brokerTokenHash),
      subject,
      facts: principal ? this.facts.get(factsKey(keys.grantId, principal)) : undefined,
    };
  }

  /**
   * Keeps what a check verified or read under this version. A broker's token is kept only in its
   * own trees (the ones a revocation of its tokens stamps). Facts are kept only for a principal
   * who is a member of every pod of the chain: adding a member announces nothing (no stamp), so a
   * non-member's next check reads membership again, and a member added meanwhile gets in at once.
   */
  remember(keys: CallMemoryKeys, learned: Learned): void {
    bounded(this.brokers).add(keys.brokerTokenHash);
    if (learned.subject && keys.subjectTokenHash !== null) bounded(this.subjects).set(keys.subjectTokenHash, learned.subject);
    if (learned.principal && learned.facts.memberOf.length === learned.podCount) {
      bounded(this.facts).set(factsKey(keys.grantId, learned.principal), learned.facts);
    }
  }
}

function factsKey(grantId: string, principal: CallPrincipal): string {
  return `${grantId}\u0000${principal.kind}\u0000${principal.id}`;
}

/** A tree's memories are bounded: past ENTRIES_PER_TREE they start over (a rare reload, never a leak). */
function bounded<T extends { size: number; clear(): void }>(memory: T): T {
  if (memory.size >= ENTRIES_PER_TREE) memory.clear();
  return memory;
}

/**
 * Per-replica cache of every tree's mutable facts. A snapshot older than maxAgeMs is dropped
 * even if its version still matches: a backstop should a touch ever fail to reach Redis.
 */
export class TreeFactsCache {
  private readonly trees: LruCache<string, TreeSnapshot>;

  /**
   * `stateOf` reads a tree's version and session in Redis, rebuilding its windows first if Redis
   * lost it.
   */
  constructor(
    private readonly stateOf: (rootId: string) => Promise<{ version: string; session: TreeSession }>,
    private readonly maxAgeMs: number,
    capacity = 10_000,
  ) {
    this.trees = new LruCache(capacity);
  }

  /**
   * The tree's snapshot: the cached one, or a new one under the version read now, before any
   * fact is loaded (so every fact in it is at least as fresh as its version).
   */
  async snapshotOf(rootId: string, now: number): Promise<TreeSnapshot> {
    const snapshot = this.trees.get(rootId);
    if (snapshot && now - snapshot.loadedAt <= this.maxAgeMs) return snapshot;
    const state = await this.stateOf(rootId);
    return this.renew(rootId, state.version, now, state.session);
  }

  /** Starts a fresh snapshot under a version the budget script just reported. */
  renew(rootId: string, version: string, now: number, session?: TreeSession): TreeSnapshot {
    const snapshot = new TreeSnapshot(version, now, session);
    this.trees.set(rootId, snapshot);
    return snapshot;
  }
}
