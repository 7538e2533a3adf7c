import { randomUUID } from 'node:crypto';
import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import { isDependencyFailure } from '../kernel/dependency';
import { ApiError } from '../kernel/errors';
import type { Logger } from '../kernel/log';
import { errorCodesOf, type Route } from '../kernel/route';
import { httpMetrics } from './metrics';
import { problemBody } from './problem';
import { parseInput, parseQuery, readBody } from './request';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

export interface AppOptions {
  log: Logger;
  /**
   * Tests only: hold every route to its declared contract, as Logto's koaGuard does. A success
   * body that its schema refuses, or a problem code the route does not declare, becomes a 500.
   */
  strictContracts?: boolean;
  /** Serves GET /api/openapi.json. */
  openApi?: () => unknown;
}

/** Maps anything thrown below to a problem document; unknown errors are logged, never echoed. */
function toApiError(error: unknown, ctx: Context, log: Logger): ApiError {
  if (error instanceof ApiError) return error;
  if (isDependencyFailure(error)) {
    log.error({ err: error, requestId: ctx.state.requestId }, 'dependency unavailable');
    return new ApiError('dependency_unavailable');
  }
  log.error({ err: error, requestId: ctx.state.requestId }, 'unhandled error');
  return new ApiError('internal_error', 'an unexpected error occurred; quote the request id to an operator');
}

class ContractViolation extends Error {}

/** Authenticates, reads and validates the request, runs the handler, writes the answer. */
async function serve(route: Route, ctx: Context, strict: boolean): Promise<void> {
  // Who calls comes first: nothing about the request is judged for an unauthenticated caller.
  const principal = route.auth ? await route.auth.authenticate({ authorization: ctx.get('authorization') || undefined }) : null;
  const params = route.params ? parseInput(route.params, ctx.params, 'path') : {};
  const query = parseQuery(route.query, ctx);
  const body = await readBody(ctx, route.body);
  const gone = new AbortController();
  ctx.res.once('close', () => gone.abort());
  let result;
  try {
    result = await route.handle({ params, query, body, principal, signal: gone.signal });
  } catch (error) {
    if (strict && error instanceof ApiError && !errorCodesOf(route).includes(error.code)) {
      throw new ContractViolation(`${route.method.toUpperCase()} ${route.path} answered \`${error.code}\`, which it does not declare`);
    }
    throw error;
  }
  if (strict && route.success.schema && result.body !== undefined) {
    const checked = route.success.schema.safeParse(result.body);
    if (!checked.success)
      throw new ContractViolation(
        `${route.method.toUpperCase()} ${route.path} answered a body its schema refuses: ${checked.error.message}`,
      );
  }
  ctx.status = result.status ?? route.success.status;
  for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
  if (result.body !== undefined) ctx.body = result.body;
}

export function createApp(routes: readonly Route[], options: AppOptions): Koa {
  const { log, strictContracts = false, openApi } = options;
  const app = new Koa({ proxy: false });
  const router = new Router();

  app.use(async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    ctx.state.requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } catch (error) {
      const apiError = toApiError(error, ctx, log);
      ctx.status = apiError.status;
      ctx.type = 'application/problem+json';
      ctx.body = problemBody(apiError, ctx.path);
      for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
      if (apiError.code === 'method_not_allowed' && ctx.state.allowedMethods) ctx.set('Allow', ctx.state.allowedMethods);
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const routePath = (ctx as { routerPath?: string }).routerPath ?? 'unmatched';
      httpMetrics.observe(ctx.method, routePath, ctx.status, seconds);
      // Only method, route template, status and timing: never a header, a body or a query string.
      log.debug(
        { requestId: ctx.state.requestId, method: ctx.method, route: routePath, status: ctx.status, ms: seconds * 1000 },
        'request',
      );
    }
  });

  for (const route of routes) {
    router[route.method](route.path, (ctx) => serve(route, ctx, strictContracts));
  }
  if (openApi) {
    router.get('/api/openapi.json', (ctx) => {
      ctx.body = openApi();
    });
  }

  app.use(router.routes());
  app.use(async (ctx) => {
    // The router matched nothing: tell a wrong method (405) from an unknown path (404).
    const allowed = new Set<string>();
    for (const layer of router.stack) {
      if (layer.match(ctx.path)) for (const method of layer.methods) allowed.add(method);
    }
    if (allowed.size > 0) {
      ctx.state.allowedMethods = [...allowed].join(', ');
      throw new ApiError('method_not_allowed', `use one of: ${ctx.state.allowedMethods}`);
    }
    throw new ApiError('not_found', 'no such route');
  });
  return app;
}
