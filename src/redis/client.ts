import { Cluster, Redis } from 'ioredis';
import type { Logger } from '../kernel/log';

/**
 * The Redis the service keeps budgets, version keys and rate limits in: one server
 * (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). Everything above takes
 * either: every multi-key command (the budget scripts, a refund) names keys of one grant tree,
 * which share its `{rootId}` hash tag and so one slot; everything else is single-key.
 */
export type RedisClient = (Redis | Cluster) & SendHook;

/**
 * What the hot path calls just before it sends commands (the budget script of a check). The plain
 * client sends each command as it comes (sendNow); a hook may hold back commands sent together so
 * that they leave in one write (src/speedups/redis-cork.ts).
 */
export type BeforeSend = () => void;
export type BeforeSendFactory = (redis: Redis | Cluster) => BeforeSend;

export interface SendHook {
  readonly beforeSend?: BeforeSend;
}

export const sendNow: BeforeSend = () => undefined;

/** `redis` with the hook its hot path calls before sending. */
export function withBeforeSend<C extends Redis | Cluster>(redis: C, hook: BeforeSendFactory): C & SendHook {
  return Object.assign(redis, { beforeSend: hook(redis) });
}

export interface RedisSettings {
  url: string;
  clusterNodes?: readonly string[];
  keyPrefix: string;
  commandTimeoutMs: number;
}

export function connectRedis(settings: RedisSettings, log: Logger, beforeSend: BeforeSendFactory = () => sendNow): RedisClient {
  // Fail fast while Redis is away: callers answer 503 instead of queueing requests.
  // No auto-pipelining: it saves a write per check under full load, but each of its pipelines
  // defines a `length` getter on itself, and an object with a getter of its own survives every
  // young-generation GC until a full one, with all it reaches: the commands, their promises and
  // the waiting checks, so a scavenge copies far more and pauses the service longer. The
  // beforeSend hook batches writes without that (src/speedups/redis-cork.ts).
  const common = { keyPrefix: settings.keyPrefix, enableOfflineQueue: false, lazyConnect: true, enableAutoPipelining: false };
  // A socket told to close that has not within a command's timeout is destroyed: a Redis that slow
  // counts as away. ioredis's default (2 s) also held a closed service's process that long when
  // Redis was away: between reconnect attempts its disconnect ends a socket already closed, whose
  // 'close' never comes to clear the timer (redis/ioredis#1247).
  const perNode = { commandTimeout: settings.commandTimeoutMs, disconnectTimeout: settings.commandTimeoutMs, maxRetriesPerRequest: 1 };
  const redis: RedisClient = settings.clusterNodes?.length
    ? new Cluster(settings.clusterNodes.map(parseNode), {
        ...common,
        redisOptions: perNode,
        // A moved or failed-over slot is followed, but a node that is down fails the command
        // (and so the check: 503) instead of being retried until the request times out.
        maxRedirections: 4,
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        clusterRetryStrategy: (times) => Math.min(times * 100, 2000),
      })
    : new Redis(settings.url, { ...common, ...perNode });
  redis.on('error', (err: Error) => log.warn({ err: { message: err.message } }, 'redis error'));
  return withBeforeSend(redis, beforeSend);
}

function parseNode(node: string): { host: string; port: number } {
  const url = new URL(node.includes('://') ? node : `redis://${node}`);
  return { host: url.hostname, port: Number(url.port || 6379) };
}
