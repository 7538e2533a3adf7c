import type { RedisClient } from '../redis/client';
import { readRedisDurability } from '../redis/durability';
import { bearerToken, unauthenticated } from '../credentials/authenticators';
import { constantTimeEqual } from '../credentials/tokens';
import { pingDatabase, type Database } from '../db/database';
import { metricsRegistry } from '../kernel/metrics';
import { defineRoute, type Authenticator, type Route } from '../kernel/route';
import { z } from '../kernel/schema';
import type { PolicyEngine } from '../policy/engine';

const tag = 'Operations';

const Readiness = z
  .object({
    status: z.enum(['ready', 'unavailable']),
    checks: z.object({ postgres: z.boolean(), redis: z.boolean(), policy: z.boolean() }),
    policyRevision: z.string().nullable(),
    policySource: z.string().openapi({ description: 'The module file, bundle file or bundle server the policy comes from' }),
    policyLastError: z
      .object({ message: z.string(), at: z.string() })
      .nullable()
      .openapi({ description: 'The last refused load (unsigned, badly signed, unreachable, broken) since the last good one' }),
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

/** What the operators' routes read, and nothing more. */
export interface OperationsDeps {
  db: Database;
  redis: RedisClient;
  policy: PolicyEngine;
  /** METRICS_TOKEN: when set, only its bearer reads /metrics. */
  metricsToken: string | undefined;
}

/**
 * An operator's token: with none configured anyone passes (a public route); with one, only its
 * bearer, compared in constant time. It is no credential of a principal, so it names no kind.
 */
function operatorToken(expected: string | undefined): Authenticator<null> {
  return {
    kinds: [],
    async authenticate(head) {
      if (expected && !constantTimeEqual(bearerToken(head), expected)) throw unauthenticated();
      return null;
    },
  };
}

export function healthRoutes(deps: OperationsDeps): Route[] {
  return [
    defineRoute(
      {
        method: 'get',
        path: '/healthz',
        operationId: 'getHealth',
        tag,
        summary: 'Liveness: the process is up',
        auth: null,
        success: { status: 200, description: 'Alive', schema: z.object({ status: z.literal('ok') }) },
      },
      async () => ({ body: { status: 'ok' as const } }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/readyz',
        operationId: 'getReadiness',
        tag,
        summary: 'Readiness: Postgres and Redis answer and a policy module is loaded (503 otherwise)',
        auth: null,
        success: { status: 200, description: 'Ready', schema: Readiness },
      },
      async () => {
        const [postgres, redis] = await Promise.all([probe(() => pingDatabase(deps.db)), probe(() => deps.redis.ping())]);
        const checks = { postgres, redis, policy: deps.policy.ready };
        const ready = postgres && redis && checks.policy;
        const redisDurability = redis ? await readRedisDurability(deps.redis).catch(() => null) : null;
        return {
          status: ready ? 200 : 503,
          body: {
            status: ready ? ('ready' as const) : ('unavailable' as const),
            checks,
            policyRevision: deps.policy.revision ?? null,
            policySource: deps.policy.source.location,
            policyLastError: deps.policy.lastFailure ?? null,
            redisDurability,
          },
        };
      },
    ),
  ];
}

/**
 * Prometheus metrics. With METRICS_TOKEN set, only a bearer of that token reads them (compared in
 * constant time); with METRICS_PORT set they are served there and not on the API port at all.
 */
export function metricsRoute(deps: OperationsDeps): Route {
  return defineRoute(
    {
      method: 'get',
      path: '/metrics',
      operationId: 'getMetrics',
      tag,
      summary: 'Prometheus metrics (METRICS_TOKEN bearer when set; on METRICS_PORT instead when set)',
      auth: deps.metricsToken ? operatorToken(deps.metricsToken) : null,
      success: { status: 200, description: 'Metrics in the Prometheus text format' },
      errors: ['unauthenticated'],
    },
    async () => ({ body: await metricsRegistry.metrics(), headers: { 'Content-Type': metricsRegistry.contentType } }),
  );
}
