import { defineRoute, type Route } from './route';
import { z } from './schema';
import { metricsRegistry } from './metrics';
import { readRedisDurability } from '../budget/durability';
import { constantTimeEqual } from '../credentials/tokens';
import { bearerToken, unauthenticated } from './auth';

const tag = 'Operations';

const Readiness = z
  .object({
    status: z.enum(['ready', 'unavailable']),
    checks: z.object({ postgres: z.boolean(), redis: z.boolean(), policy: z.boolean() }),
    policyRevision: z.string().nullable(),
    redisDurability: z
      .object({
        persistence: z.enum(['aof', 'rdb', 'none', 'unknown']),
        evictionPolicy: z.string().nullable(),
      })
      .nullable()
      .openapi({
        description:
          'How Redis keeps budgets. Budgets survive a restart either way (windows are rebuilt from the call trail); ' +
          'an eviction policy other than `noeviction` may drop a window under memory pressure and admit calls early.',
      }),
  })
  .openapi('Readiness');

async function probe(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

export const healthRoutes: Route[] = [
  defineRoute(
    {
      method: 'get',
      path: '/healthz',
      tag,
      summary: 'Liveness: the process is up',
      auth: null,
      success: { status: 200, description: 'Alive', schema: z.object({ status: z.literal('ok') }) },
    },
    async () => ({ body: { status: 'ok' } }),
  ),
  defineRoute(
    {
      method: 'get',
      path: '/readyz',
      tag,
      summary: 'Readiness: Postgres and Redis answer and a policy module is loaded (503 otherwise)',
      auth: null,
      success: { status: 200, description: 'Ready', schema: Readiness },
    },
    async ({ deps }) => {
      const [postgres, redis] = await Promise.all([
        probe(() => deps.db.raw('select 1')),
        probe(() => deps.redis.ping()),
      ]);
      const checks = { postgres, redis, policy: deps.policy.ready };
      const ready = postgres && redis && checks.policy;
      const redisDurability = redis ? await readRedisDurability(deps.redis).catch(() => null) : null;
      return {
        status: ready ? 200 : 503,
        body: { status: ready ? 'ready' : 'unavailable', checks, policyRevision: deps.policy.revision ?? null, redisDurability },
      };
    },
  ),
];

/**
 * Prometheus metrics. With METRICS_TOKEN set, only a bearer of that token reads them (compared in
 * constant time); with METRICS_PORT set they are served there and not on the API port at all.
 */
export const metricsRoute: Route = defineRoute(
  {
    method: 'get',
    path: '/metrics',
    tag,
    summary: 'Prometheus metrics (METRICS_TOKEN bearer when set; on METRICS_PORT instead when set)',
    auth: null,
    success: { status: 200, description: 'Metrics in the Prometheus text format' },
    errors: ['unauthenticated'],
  },
  async ({ deps, ctx }) => {
    const expected = deps.config.METRICS_TOKEN;
    if (expected && !constantTimeEqual(bearerToken(ctx), expected)) throw unauthenticated();
    return { body: await metricsRegistry.metrics(), headers: { 'Content-Type': metricsRegistry.contentType } };
  },
);
