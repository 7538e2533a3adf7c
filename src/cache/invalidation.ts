import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * Facts the broker check may cache change when these records change. After the change commits,
 * the changing request stamps a fresh random version into Redis; every replica compares the
 * versions it cached against Redis on the next check. Random values (not counters) keep this
 * right across a Redis restart: a missing key never equals a cached version.
 */
export type InvalidationScope = 'pod' | 'agent' | 'connection' | 'grant-tree';

export interface Invalidation {
  touch(scope: InvalidationScope, id: string): Promise<void>;
}

export function versionKey(scope: InvalidationScope, id: string): string {
  return `ver:${scope}:${id}`;
}

export function createRedisInvalidation(redis: Redis): Invalidation {
  return {
    async touch(scope, id) {
      await redis.set(versionKey(scope, id), randomUUID());
    },
  };
}
