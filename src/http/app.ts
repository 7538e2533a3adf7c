import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import { ApiError } from '../kernel/errors';
import type { Logger } from '../kernel/log';
import type { PassThroughRoute } from '../kernel/pass-through';
import type { Route } from '../kernel/route';
import { serveApiDocs } from './api-docs';
import { httpMetrics } from './metrics';
import { problemBody } from './problem';
import { parseQuery, readBody, readText } from './request';
import { readForm } from './form';
import { ClientGone, requestIdOf, runRoute, toApiError } from './route-call';

export interface AppOptions {
  log: Logger;
  /**
   * Tests only: hold every route to its declared contract, as Logto's koaGuard does. A success
   * body that its schema refuses, or a problem code the route does not declare, becomes a 500.
   */
  strictContracts?: boolean;
  /** Serves GET /api/openapi.json, and GET /api/docs, the reference rendered from it (./api-docs.ts). */
  openApi?: () => unknown;
  /**
   * A handler ahead of Koa, made from the app's routes (the speed-ups' direct path for the routes
   * marked `direct`); without one, Koa serves every request.
   */
  front?: FrontHandlerFactory;
  /** Routes that see every method and path under their prefix, as forwarded (Envoy's HTTP ext_authz). */
  passThrough?: readonly PassThroughRoute[];
}

/** What the HTTP server runs: Node's request listener for every route of the app. */
export interface HttpApp {
  callback(): RequestListener;
}

/** Answers a request ahead of Koa (true), or leaves it to Koa (false) before reading any of it. */
export type FrontHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

export type FrontHandlerFactory = (routes: readonly Route[], options: { log: Logger; strictContracts: boolean }) => FrontHandler;

/** Serves one route through Koa: the shared route call with Koa's path, query and body readers. */
async function serve(route: Route, ctx: Context, strict: boolean): Promise<void> {
  const gone = new ClientGone();
  ctx.res.once('close', () => gone.closed(ctx.res.writableFinished));
  const result = await runRoute(
    route,
    {
      authorization: ctx.get('authorization') || undefined,
      params: ctx.params,
      query: () => parseQuery(route.query, ctx),
      body: () => (route.form ? readForm(ctx.req, route.form) : readBody(ctx, route.body)),
      gone,
    },
    strict,
  );
  ctx.status = result.status;
  for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value);
  if (result.body !== undefined) ctx.body = result.body;
}

/**
 * Every route on Koa, and whatever `options.front` takes ahead of it (the direct routes, the broker
 * check, on Node's own server with the same contract: src/speedups/direct-http.ts).
 */
export function createApp(routes: readonly Route[], options: AppOptions): HttpApp {
  const { log, strictContracts = false, openApi } = options;
  const app = new Koa({ proxy: false });
  const router = new Router();

  app.use(async (ctx, next) => {
    ctx.state.requestId = requestIdOf(ctx.get('x-request-id'), randomUUID);
    ctx.set('X-Request-Id', ctx.state.requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } catch (error) {
      const apiError = toApiError(error, ctx.state.requestId, log);
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

  for (const route of options.passThrough ?? []) {
    app.use(async (ctx, next) => {
      if (ctx.path !== route.prefix && !ctx.path.startsWith(`${route.prefix}/`)) return next();
      (ctx as { routerPath?: string }).routerPath = `${route.prefix}/*`;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(ctx.req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const body = await readText(ctx.req, route.maxBodyBytes);
      const answer = await route.handle({ method: ctx.method, path: ctx.url.slice(route.prefix.length) || '/', headers, body });
      ctx.status = answer.status;
      for (const [name, value] of Object.entries(answer.headers)) ctx.set(name, value);
      if (answer.body !== undefined) {
        ctx.type = answer.status >= 300 ? 'application/problem+json' : 'application/json';
        ctx.body = answer.body;
      }
    });
  }
  for (const route of routes) {
    router[route.method](route.path, (ctx) => serve(route, ctx, strictContracts));
  }
  if (openApi) {
    router.get('/api/openapi.json', (ctx) => {
      ctx.body = openApi();
    });
    router.get('/api/docs', serveApiDocs);
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
  const front = options.front?.(routes, { log, strictContracts });
  return {
    callback() {
      const viaKoa = app.callback();
      return (req, res) => {
        if (!front?.(req, res)) void viaKoa(req, res);
      };
    },
  };
}
