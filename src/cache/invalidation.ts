import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Database } from '../db/database';
import type { Logger } from '../log';
import { treeVersionKey } from '../budget/keys';

/**
 * Cross-replica invalidation of the broker's cached facts.
 *
 * Each grant tree (a root and its descendants) has one version key in Redis, `{grt_root}:ver`,
 * holding a random value. A replica caches the mutable facts of a tree (revocation, connection
 * status and tools, membership, runtime state, verified tokens) under the version it read
 * before loading them, and the budget script compares that version on every check: a mismatch
 * answers 'stale' without consuming, and the replica reloads. A change to any of those records
 * calls `touch` after it commits; touch maps the record to the trees it can affect and stamps a
 * fresh random version on each, so the very next check on every replica reloads.
 *
 * Random values, not counters: after a Redis restart the key is missing, the script stores a new
 * random value, and no replica's cached version can equal it.
 */
export type InvalidationScope = 'pod' | 'agent' | 'connection' | 'grant-tree' | 'broker';

export interface Invalidation {
  touch(scope: InvalidationScope, id: string): Promise<void>;
}

/** The roots of the trees whose cached facts a change to (scope, id) can make wrong. */
function affectedRoots(db: Database, scope: InvalidationScope, id: string) {
  const grants = db('grants').distinct('root_id');
  switch (scope) {
    case 'grant-tree': // any grant of the tree names it
      return grants.where('id', id);
    case 'connection':
      return grants.where('connection_id', id);
    case 'broker':
      return grants.where('broker_id', id);
    case 'pod': // membership decides effective audiences of the pod's grants
      return grants.where('target_pod_id', id);
    case 'agent': // an agent is a principal only in its own pod; seat grants name it as target
      return grants
        .whereIn('target_pod_id', db('agents').select('pod_id').where('id', id))
        .orWhere((q) => q.where('target_kind', 'seat').andWhere('target_id', id));
  }
}

const RETRY_MS = 500;

export function createRedisInvalidation(redis: Redis, db: Database, log: Logger): Invalidation & { close(): void } {
  // A touch that could not reach Redis is retried until it lands: the change it announces has
  // already committed. Cached facts also have a maximum age (see src/broker/tree-facts.ts).
  const pending = new Map<string, InvalidationScope>();
  let timer: NodeJS.Timeout | undefined;

  async function stamp(scope: InvalidationScope, id: string): Promise<void> {
    const rows = (await affectedRoots(db, scope, id)) as Array<{ root_id: string }>;
    if (rows.length === 0) return;
    const pipeline = redis.pipeline();
    for (const { root_id: rootId } of rows) pipeline.set(treeVersionKey(rootId), randomUUID());
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([error]) => error);
    if (failed) throw failed[0];
  }

  function retryLater(scope: InvalidationScope, id: string): void {
    pending.set(`${scope}\u0000${id}`, scope);
    timer ??= setInterval(() => {
      for (const [key, retryScope] of [...pending]) {
        const retryId = key.slice(key.indexOf('\u0000') + 1);
        stamp(retryScope, retryId).then(
          () => pending.delete(key),
          () => undefined,
        );
      }
      if (pending.size === 0 && timer) {
        clearInterval(timer);
        timer = undefined;
      }
    }, RETRY_MS);
    timer.unref();
  }

  return {
    async touch(scope, id) {
      try {
        await stamp(scope, id);
      } catch (error) {
        log.error({ err: { message: (error as Error).message }, scope, id }, 'invalidation failed; retrying in the background');
        retryLater(scope, id);
      }
    },
    close() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
