import type { Database } from '../db/database';
import { LruCache } from '../cache/lru';
import type { ConnectionRow, ToolResourcePointers } from '../connections/repository';
import { toConnectionFact, type ConnectionFact } from '../grants/facts';
import type { Chain } from './chain';

import type { CallPrincipal } from '../kernel/principals';

/** What can change about a call's chain: exactly what the broker/check policy needs besides the chain. */
export interface MutableFacts {
  revokedIds: string[];
  connection: ConnectionFact;
  /** Resource pointers of the connection's tools that declare them (CONTRACT §8), by tool name. */
  toolResources: Record<string, ToolResourcePointers>;
  /** Pods of the chain's targets the principal is a current member of. */
  memberOf: string[];
  /** desired_state of an agent principal; null for a user or an agent that is gone. */
  desiredState: 'running' | 'stopped' | null;
}

/** A verified credential, remembered under the tree's version (a token deletion bumps it). */
export type CachedCredential =
  { kind: 'broker'; brokerId: string } | { kind: 'subject'; principal: CallPrincipal; expiresAtMs: number | null };

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
export class TreeSnapshot {
  private readonly facts = new Map<string, MutableFacts>();
  private readonly credentials = new Map<string, CachedCredential>();

  constructor(
    readonly version: string,
    readonly loadedAt: number,
  ) {}

  credential(key: string): CachedCredential | undefined {
    return this.credentials.get(key);
  }

  rememberCredential(key: string, credential: CachedCredential): void {
    remember(this.credentials, key, credential);
  }

  factsOf(key: string): MutableFacts | undefined {
    return this.facts.get(key);
  }

  rememberFacts(key: string, facts: MutableFacts): void {
    remember(this.facts, key, facts);
  }
}

/** A tree's maps are bounded: past ENTRIES_PER_TREE they start over (a rare reload, never a leak). */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= ENTRIES_PER_TREE) map.clear();
  map.set(key, value);
}

// One round trip for everything; lists travel as JSON text (knex would expand a bound array).
const FACTS_SQL = `
select
  (select coalesce(json_agg(id), '[]'::json) from grants
    where id in (select json_array_elements_text(?::json)) and revoked_at is not null) as revoked_ids,
  (select row_to_json(c) from (select id, owner_id, kind, status from connections where id = ?) c) as connection,
  (select coalesce(json_object_agg(name, access), '{}'::json) from connection_tools
    where connection_id = ?) as tools,
  (select coalesce(json_object_agg(name, resource) filter (where resource is not null), '{}'::json)
    from connection_tools where connection_id = ?) as tool_resources,
  (select coalesce(json_agg(pod_id), '[]'::json) from pod_members
    where member_id = ? and pod_id in (select json_array_elements_text(?::json))) as member_of,
  (select desired_state from agents where id = ?) as desired_state`;

interface FactsRow {
  revoked_ids: string[];
  connection: Pick<ConnectionRow, 'id' | 'owner_id' | 'kind' | 'status'> | null;
  tools: ConnectionFact['tools'];
  tool_resources: Record<string, ToolResourcePointers>;
  member_of: string[];
  desired_state: 'running' | 'stopped' | null;
}

/**
 * Per-replica cache of every tree's mutable facts. A snapshot older than maxAgeMs is dropped
 * even if its version still matches: a backstop should a touch ever fail to reach Redis.
 */
export class TreeFactsCache {
  private readonly trees: LruCache<string, TreeSnapshot>;

  constructor(
    private readonly db: Database,
    private readonly maxAgeMs: number,
    capacity = 10_000,
  ) {
    this.trees = new LruCache(capacity);
  }

  /** The snapshot to check against, or undefined when the replica must first read the version. */
  current(rootId: string, now: number): TreeSnapshot | undefined {
    const snapshot = this.trees.get(rootId);
    if (!snapshot || now - snapshot.loadedAt > this.maxAgeMs) return undefined;
    return snapshot;
  }

  /** Starts a fresh snapshot under a version just read from Redis (before any fact is loaded). */
  renew(rootId: string, version: string, now: number): TreeSnapshot {
    const snapshot = new TreeSnapshot(version, now);
    this.trees.set(rootId, snapshot);
    return snapshot;
  }

  /** The facts of one call: one query on a miss, nothing on a hit. No principal: nothing to know. */
  async factsFor(snapshot: TreeSnapshot, chain: Chain, principal: CallPrincipal | null): Promise<MutableFacts> {
    if (!principal) return NO_PRINCIPAL_FACTS;
    const key = `${chain[0]!.id}\u0000${principal.kind}\u0000${principal.id}`;
    const cached = snapshot.factsOf(key);
    if (cached) return cached;
    const connectionId = chain[0]!.connection_id;
    const podIds = [...new Set(chain.map((g) => g.target.pod_id))];
    const result = await this.db.raw<{ rows: FactsRow[] }>(FACTS_SQL, [
      JSON.stringify(chain.map((g) => g.id)),
      connectionId,
      connectionId,
      connectionId,
      principal.id,
      JSON.stringify(podIds),
      principal.kind === 'agent' ? principal.id : null,
    ]);
    const row = result.rows[0]!;
    const facts: MutableFacts = {
      revokedIds: row.revoked_ids,
      // A connection that is gone is as good as disconnected: nothing is allowed through it.
      connection: row.connection ? toConnectionFact(row.connection, row.tools) : { ...NO_PRINCIPAL_FACTS.connection },
      toolResources: row.tool_resources,
      memberOf: row.member_of,
      desiredState: row.desired_state,
    };
    // Adding a member announces nothing (no touch), so a non-member is never remembered as such:
    // their next check reads membership again and a member added meanwhile is let in at once.
    if (facts.memberOf.length === podIds.length) snapshot.rememberFacts(key, facts);
    return facts;
  }
}
