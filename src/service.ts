import { Redis } from 'ioredis';
import type { Config } from './config';
import { createDatabase, ensureDatabaseExists, migrateToLatest } from './db/database';
import { createHumanJwtVerifier } from './credentials/human-jwt';
import { CacheInvalidation } from './cache/invalidation';
import { createBrokerComponents } from './broker/components';
import type { Deps } from './deps';
import { createApp } from './http/app';
import { buildOpenApiDocument } from './http/openapi';
import { allRoutes } from './http/routes';
import { metricsRoute } from './http/health';
import { createLogger, type Logger } from './log';
import { PolicyEngine } from './policy/engine';
import { REQUIRED_ENTRYPOINTS } from './policy/entrypoints';
import { API_DECISIONS } from './http/decisions';
import { EventWaker } from './events/waker';
import { startEventRetention } from './events/retention';
import { readRedisDurability } from './budget/durability';
import { RateLimit } from './budget/rate-limit';

/** A Redis that evicts keys under memory pressure may drop a budget window: say so at start. */
async function warnOnEvictingRedis(redis: Redis, log: Logger): Promise<void> {
  const durability = await readRedisDurability(redis).catch(() => null);
  if (durability?.evictionPolicy && durability.evictionPolicy !== 'noeviction') {
    log.warn({ evictionPolicy: durability.evictionPolicy }, 'Redis may evict budget windows under memory pressure; set maxmemory-policy noeviction');
  }
}

export interface ServiceOptions {
  logger?: Logger;
  /** Create the database and run migrations first (the start command and tests do). */
  migrate?: boolean;
}

/** Wires the dependencies and the Koa app; no behaviour of its own. */
export async function buildService(config: Config, options: ServiceOptions = {}) {
  const log = options.logger ?? createLogger(config.LOG_LEVEL);
  if (options.migrate) await ensureDatabaseExists(config.DATABASE_URL);
  const db = createDatabase(config.DATABASE_URL, config.DATABASE_POOL_MAX);
  if (options.migrate) await migrateToLatest(db);
  const redis = new Redis(config.REDIS_URL, {
    keyPrefix: config.REDIS_KEY_PREFIX,
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
    // Fail fast while Redis is away: callers answer 503 instead of queueing requests.
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
  });
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis error'));
  await redis.connect().catch((err) => log.error({ err }, 'redis unavailable at start; will keep retrying'));
  void warnOnEvictingRedis(redis, log);
  const policy = new PolicyEngine(
    config.POLICY_WASM_PATH,
    log.child({ component: 'policy' }),
    config.DECISION_LOG,
    REQUIRED_ENTRYPOINTS,
    config.NODE_ENV === 'production',
  );
  await policy.reload();
  if (config.POLICY_WATCH) policy.watch();

  const invalidation = new CacheInvalidation(db, redis, log.child({ component: 'invalidation' }), {
    confirmTimeoutMs: config.INVALIDATION_CONFIRM_TIMEOUT_MS,
    relayIntervalMs: config.INVALIDATION_RELAY_INTERVAL_MS,
  });
  invalidation.startRelay();
  const deps: Deps = {
    config,
    db,
    redis,
    policy,
    log,
    verifyHumanJwt: createHumanJwtVerifier(config),
    invalidation,
    broker: createBrokerComponents(config, db, redis),
    attenuationLimit: new RateLimit(redis, 'attenuations', config.ATTENUATION_RATE_LIMIT, config.ATTENUATION_RATE_WINDOW_MS),
    eventWaker: new EventWaker(config.DATABASE_URL, log.child({ component: 'events' })),
  };
  const retention = startEventRetention(db, config.EVENT_RETENTION_MS, log.child({ component: 'events' }));
  let openApi: unknown;
  // With METRICS_PORT, /metrics leaves the API port for an app (and port) of its own.
  const metricsApart = config.METRICS_PORT !== undefined;
  const app = createApp(deps, metricsApart ? allRoutes.filter((route) => route !== metricsRoute) : allRoutes, {
    openApi: () => (openApi ??= buildOpenApiDocument(allRoutes, API_DECISIONS)),
  });
  const metricsApp = metricsApart ? createApp(deps, [metricsRoute]) : undefined;
  if (config.NODE_ENV === 'production' && !config.METRICS_TOKEN && !metricsApart) {
    log.warn('/metrics is open to anyone who reaches the API port: set METRICS_TOKEN or METRICS_PORT');
  }

  async function close(): Promise<void> {
    policy.close();
    retention.stop();
    invalidation.close();
    await deps.broker.trail.settle();
    await deps.eventWaker.close();
    redis.disconnect();
    await db.destroy();
  }

  return { app, metricsApp, deps, close };
}
