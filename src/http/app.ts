import { randomUUID } from 'node:crypto';
import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import type { Deps } from '../deps';
import { PolicyUnavailableError } from '../policy/engine';
import { ApiError, problemBody } from './problem';
import { isDependencyFailure } from './dependency-failure';
import type { Route } from './route';
import { httpMetrics } from './metrics';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Maps anything thrown below to a problem document; unknown errors are logged, never echoed. */
function toApiError(error: unknown, ctx: Context, deps: Deps): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof PolicyUnavailableError) return new ApiError('dependency_unavailable', 'the policy is unavailable');
  if (isDependencyFailure(error)) {
    deps.log.error({ err: error, requestId: ctx.state.requestId }, 'dependency unavailable');
    return new ApiError('dependency_unavailable');
  }
  deps.log.error({ err: error, requestId: ctx.state.requestId }, 'unhandled error');
  return new ApiError('internal_error', 'an unexpected error occurred; quote the request id to an operator');
}

export function createApp(deps: Deps, routes: readonly Route[], extras: { openApi?: () => unknown } = {}): Koa {
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
      const apiError = toApiError(error, ctx, deps);
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
      deps.log.debug({ requestId: ctx.state.requestId, method: ctx.method, route: routePath, status: ctx.status, ms: seconds * 1000 }, 'request');
    }
  });

  for (const route of routes) {
    router[route.method](route.path, (ctx) => route.run(ctx, deps));
  }
  const { openApi } = extras;
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
