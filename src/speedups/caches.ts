/**
 * Speed-up: the broker check's reads kept per replica, so that a warm check reads nothing from
 * Postgres and makes one Redis round trip (its budget script).
 *
 * Trades: memory (bounded: LRUs of 10 000 chains, trees and credential sources, 1 000 broker
 * tokens, 2 000 memories a tree) for the reads of every check. What may be kept, and for how long,
 * is the rule that keeps it correct:
 *   - a chain and a tool's credential source never change once they exist (unknown grants are not
 *     kept);
 *   - everything else of a tree (its revocations, connection, memberships, the runtime, a broker's
 *     tokens, a subject's token) is kept under the tree's version in Redis, which every change
 *     moves and every budget script compares (`stale`: read again), and for at most
 *     BROKER_FACT_MAX_AGE_MS in any case;
 *   - a broker token taken from memory is confirmed under the tree (its revocation moves the
 *     version of every tree of the broker) or, for an answer about no tree of its own, against
 *     Postgres.
 * Facts are kept only for a principal who is a member of every pod of the chain: adding a member
 * announces nothing, so a non-member's next check reads membership again.
 *
 * Off (SPEEDUPS=off): broker/reads.ts's plain reads, every read every time.
 */
import type { SlidingWindowBudget, TreeSession } from '../budget/sliding-window';
import type { CheckingBroker } from '../broker/authenticator';
import { podsOf, type BrokerTokenReads, type Chain, type CheckReads, type CredentialSource, type TreeReads } from '../broker/reads';
import type { MutableFacts } from '../broker/tree-facts';
import { hashToken } from '../credentials/tokens';
import { LruCache } from '../kernel/lru';
import type { CallPrincipal } from '../kernel/principals';

const ENTRIES_PER_TREE = 2_000;
const CAPACITY = 10_000;
const BROKER_TOKENS = 1_000;

/** A forwarded subject token verified under the tree's version (a token deletion moves it). */
interface RememberedSubject {
  principal: CallPrincipal;
  expiresAtMs: number | null;
  /** An access token's one grant: compared by the check with each call's. */
  grantId?: string;
}

/** What one tree's version vouches for: brokers' tokens, subjects, and each principal's facts. */
class TreeSnapshot {
  readonly brokers = new Set<string>();
  readonly subjects = new Map<string, RememberedSubject>();
  readonly facts = new Map<string, MutableFacts>();

  constructor(
    readonly version: string,
    readonly loadedAt: number,
    /** The tree's session as the budget script last returned it (every charge renews it). */
    public session: TreeSession,
  ) {}
}

const factsKey = (grantId: string, principal: CallPrincipal) => `${grantId}\u0000${principal.kind}\u0000${principal.id}`;

/** A tree's memories are bounded: past ENTRIES_PER_TREE they start over (a rare reload, never a leak). */
function bounded<T extends { size: number; clear(): void }>(memory: T): T {
  if (memory.size >= ENTRIES_PER_TREE) memory.clear();
  return memory;
}

/** The slice of the budget the check calls; the caches follow every answer's session. */
export type CheckBudget = Pick<SlidingWindowBudget, 'run' | 'refund' | 'treeState'>;

/**
 * The check's reads through the caches, and its budget as the caches observe it: each answer of
 * the budget script brings the tree's session, which the tree's next check on this replica
 * decides on, so no stage writes a cache.
 */
export function cachedCheckReads(
  plain: CheckReads,
  budget: CheckBudget,
  options: { factMaxAgeMs: number },
): { reads: CheckReads; budget: CheckBudget } {
  const chains = new LruCache<string, Chain>(CAPACITY);
  const trees = new LruCache<string, TreeSnapshot>(CAPACITY);
  const sources = new LruCache<string, CredentialSource | null>(CAPACITY);

  function readsOf(snapshot: TreeSnapshot, inner: TreeReads): TreeReads {
    return {
      version: snapshot.version,
      session: snapshot.session,
      async confirmBroker(broker: CheckingBroker) {
        if (snapshot.brokers.has(broker.tokenHash)) return;
        await inner.confirmBroker(broker);
        // Kept only in its own trees: the ones a revocation of its tokens moves.
        bounded(snapshot.brokers).add(broker.tokenHash);
      },
      async subjectOf(token, nowMs) {
        const hash = hashToken(token);
        const kept = snapshot.subjects.get(hash);
        if (kept && (kept.expiresAtMs === null || kept.expiresAtMs > nowMs)) return kept;
        const verified = await inner.subjectOf(token, nowMs);
        if (verified) bounded(snapshot.subjects).set(hash, verified);
        return verified;
      },
      async factsOf(chain, principal) {
        const key = factsKey(chain[0]!.id, principal);
        const kept = snapshot.facts.get(key);
        if (kept) return kept;
        const facts = await inner.factsOf(chain, principal);
        if (facts.memberOf.length === podsOf(chain).length) bounded(snapshot.facts).set(key, facts);
        return facts;
      },
    };
  }

  const reads: CheckReads = {
    async chainOf(grantId) {
      const kept = chains.get(grantId);
      if (kept) return kept;
      const chain = await plain.chainOf(grantId);
      if (chain) chains.set(grantId, Object.freeze(chain));
      return chain;
    },
    approvalOf: (approvalId) => plain.approvalOf(approvalId),
    openApprovalOf: (call) => plain.openApprovalOf(call),
    confirmBroker: (broker) => plain.confirmBroker(broker),
    async treeAt(rootId, nowMs, known) {
      let snapshot = known ? undefined : trees.get(rootId);
      if (!snapshot || nowMs - snapshot.loadedAt > options.factMaxAgeMs) {
        // The version first (or the one the budget script just reported), then any fact under it.
        const state = known ?? (await plain.treeAt(rootId, nowMs));
        snapshot = new TreeSnapshot(state.version, nowMs, state.session);
        trees.set(rootId, snapshot);
      }
      return readsOf(snapshot, await plain.treeAt(rootId, nowMs, { version: snapshot.version, session: snapshot.session }));
    },
    async credentialSourceOf(connectionId, tool) {
      const key = `${connectionId}\n${tool}`;
      const kept = sources.get(key);
      if (kept !== undefined) return kept;
      const source = await plain.credentialSourceOf(connectionId, tool);
      sources.set(key, source);
      return source;
    },
  };

  const observed: CheckBudget = {
    async run(request) {
      const answer = await budget.run(request);
      const snapshot = trees.get(request.rootId);
      if (snapshot && answer.kind !== 'missing') snapshot.session = answer.session;
      return answer;
    },
    refund: (...args) => budget.refund(...args),
    treeState: (rootId) => budget.treeState(rootId),
  };
  return { reads, budget: observed };
}

/**
 * Broker tokens this replica verified recently, by SHA-256, for at most `maxAgeMs`. A token taken
 * from here is `remembered`: trusted only where it is confirmed again (see above).
 */
export function cachedBrokerTokens(plain: BrokerTokenReads, maxAgeMs: number): BrokerTokenReads {
  const tokens = new LruCache<string, { brokerId: string; at: number }>(BROKER_TOKENS);
  const confirm = async (tokenHash: string, nowMs: number) => {
    const brokerId = await plain.confirm(tokenHash, nowMs);
    if (brokerId) tokens.set(tokenHash, { brokerId, at: nowMs });
    else tokens.delete(tokenHash);
    return brokerId;
  };
  return {
    async byHash(tokenHash, nowMs) {
      const kept = tokens.get(tokenHash);
      if (kept && nowMs - kept.at <= maxAgeMs) return { brokerId: kept.brokerId, remembered: true };
      const brokerId = await confirm(tokenHash, nowMs);
      return brokerId ? { brokerId, remembered: false } : null;
    },
    confirm,
  };
}
