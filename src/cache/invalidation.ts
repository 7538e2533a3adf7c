import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { RedisClient } from '../redis/client';
import type { Database } from '../db/database';
import type { Logger } from '../kernel/log';
import { treeVersionKey } from '../budget/keys';
import { ApiError } from '../kernel/errors';
import { deleteInvalidations, insertInvalidations, invalidationsOlderThan, type InvalidationRow } from './repository';

/**
 * Cross-replica invalidation of the broker's cached facts.
 *
 * Each grant tree (a root and its descendants) has one version key in Redis, `{grt_root}:ver`,
 * holding a random value. A replica caches the mutable facts of a tree (revocation, connection
 * status and tools, membership, runtime state, verified tokens) under the version it read
 * before loading them, and the budget script compares that version on every check: a mismatch
 * answers 'stale' without consuming, and the replica reloads.
 *
 * The promise: once a change that forbids calls (revoke, runtime stop, member removal, token
 * deletion, disconnection, broker revoke) answers 2xx, no replica allows a call it forbids.
 * So a change runs in `change()`: every `touch` inside writes the trees it affects to the
 * `cache_invalidations` outbox in the change's own transaction; after commit the request stamps
 * a fresh random version on each of those trees and answers only once the stamps landed, or
 * 503 `invalidation_pending` (the change stays committed; repeating the request re-confirms).
 * A relay on every replica stamps what is left in the outbox (Redis was cut off from the
 * requesting replica, or it died between commit and stamp), so nothing committed is lost.
 *
 * Random values, not counters: after a Redis restart the key is missing, the script stores a new
 * random value, and no replica's cached version can equal it.
 */
export type InvalidationScope = 'pod' | 'agent' | 'connection' | 'grant-tree' | 'broker';

export type Touch = (scope: InvalidationScope, id: string) => Promise<void>;

/**
 * Which trees a change reaches (a port: cache/ knows no domain; composition.ts fills it from
 * grants/repository.ts).
 */
export interface AffectedTrees {
  /** The roots of the trees whose cached facts a change to (scope, id) can make wrong, read in its transaction. */
  rootsOf(trx: Knex.Transaction, scope: InvalidationScope, id: string): Promise<string[]>;
}

export interface InvalidationOptions {
  /** How long a request keeps trying to stamp before it answers 503 invalidation_pending. */
  confirmTimeoutMs: number;
  /** How often each replica's relay looks at the outbox. */
  relayIntervalMs: number;
}

const RETRY_GAP_MS = 50;
/** The relay leaves a request this long to confirm its own rows before stamping them itself. */
const RELAY_GRACE_MS = 300;
const RELAY_BATCH = 500;
const RELAY_MAX_BACKOFF_MS = 5000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class CacheInvalidation {
  private relayTimer: NodeJS.Timeout | undefined;
  private relaying = false;
  private relayFailing = false;

  constructor(
    private readonly db: Database,
    private readonly redis: RedisClient,
    private readonly log: Logger,
    private readonly options: InvalidationOptions,
    private readonly trees: AffectedTrees,
  ) {}

  /**
   * Runs `work` in a transaction; each `touch` in it is written to the outbox with the change.
   * Resolves once the change committed and every touched tree is stamped in Redis.
   */
  async change<T>(work: (trx: Knex.Transaction, touch: Touch) => Promise<T>): Promise<T> {
    const pending: InvalidationRow[] = [];
    const result = await this.db.transaction(async (trx) => {
      const touch: Touch = async (scope, id) => {
        pending.push(...(await this.record(trx, scope, id)));
      };
      return work(trx, touch);
    });
    await this.confirm(pending);
    return result;
  }

  /** A change of its own: only the stamp (a repeat, an operator's command). */
  touch(scope: InvalidationScope, id: string): Promise<void> {
    return this.change((_trx, touch) => touch(scope, id));
  }

  /** Writes the trees a change to (scope, id) affects into the outbox, in the change's transaction. */
  async record(trx: Knex.Transaction, scope: InvalidationScope, id: string): Promise<InvalidationRow[]> {
    return insertInvalidations(trx, await this.trees.rootsOf(trx, scope, id));
  }

  /** Stamps the touched trees, retrying until the deadline; then the outbox rows go. */
  private async confirm(rows: readonly InvalidationRow[]): Promise<void> {
    if (rows.length === 0) return;
    const deadline = Date.now() + this.options.confirmTimeoutMs;
    for (;;) {
      try {
        await this.stamp(rows);
        break;
      } catch (error) {
        if (Date.now() + RETRY_GAP_MS >= deadline) {
          this.log.error(
            { err: { message: (error as Error).message }, trees: rows.length },
            'invalidation not confirmed; the relay will stamp it',
          );
          throw new ApiError(
            'invalidation_pending',
            'the change is committed, but not every replica could be told yet; repeat the request to confirm it',
            {},
            { 'Retry-After': '1' },
          );
        }
        await sleep(RETRY_GAP_MS);
      }
    }
    // The relay deletes them should this fail; stamping twice costs one extra reload, no more.
    await deleteInvalidations(
      this.db,
      rows.map((row) => row.id),
    ).catch(() => undefined);
  }

  private async stamp(rows: readonly InvalidationRow[]): Promise<void> {
    // One SET per tree, sent together but not as one pipeline: on a Redis Cluster the trees' keys
    // sit in different slots, which a pipeline may not span.
    const roots = [...new Set(rows.map((row) => row.root_id))];
    await Promise.all(roots.map((rootId) => this.redis.set(treeVersionKey(rootId), randomUUID())));
  }

  /** Starts this replica's relay; every replica runs one (double stamps are harmless). */
  startRelay(): void {
    if (this.relayTimer) return;
    this.scheduleRelay(this.options.relayIntervalMs);
  }

  close(): void {
    if (this.relayTimer) clearTimeout(this.relayTimer);
    this.relayTimer = undefined;
  }

  private scheduleRelay(delayMs: number): void {
    this.relayTimer = setTimeout(() => void this.relayOnce(), delayMs);
    this.relayTimer.unref();
  }

  /** Stamps what requests left in the outbox; backs off while Postgres or Redis is away. */
  async relayOnce(): Promise<number> {
    if (this.relaying) return 0;
    this.relaying = true;
    let stamped = 0;
    let delay = this.options.relayIntervalMs;
    try {
      const rows = await invalidationsOlderThan(this.db, RELAY_GRACE_MS, RELAY_BATCH);
      if (rows.length > 0) {
        await this.stamp(rows);
        await deleteInvalidations(
          this.db,
          rows.map((row) => row.id),
        );
        stamped = rows.length;
        this.log.info({ trees: new Set(rows.map((row) => row.root_id)).size }, 'relay stamped invalidations a request could not confirm');
      }
      if (this.relayFailing) this.log.info('invalidation relay recovered');
      this.relayFailing = false;
    } catch (error) {
      if (!this.relayFailing) this.log.warn({ err: { message: (error as Error).message } }, 'invalidation relay failing; backing off');
      this.relayFailing = true;
      delay = Math.min(RELAY_MAX_BACKOFF_MS, this.options.relayIntervalMs * 4);
    } finally {
      this.relaying = false;
      if (this.relayTimer) this.scheduleRelay(delay);
    }
    return stamped;
  }
}
