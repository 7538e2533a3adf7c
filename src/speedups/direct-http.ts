/**
 * Speed-up: the routes declared `direct` (the broker check, called before every tool call of every
 * agent) served on Node's own HTTP server, in front of Koa.
 *
 * Trades: a second framing of requests and answers (request id, headers, status, metrics, the
 * request's log line), kept equal to Koa's by test/http/direct-route.test.ts, for skipping Koa's
 * context, router, middleware chain and body parser, about a third of a check's CPU. Only the
 * framing differs: authentication, body rules (http/request.ts), schemas, the handler, contract
 * checks and problem documents are the same code as on Koa (http/route-call.ts). Anything unusual
 * for such a route (a query string, a compressed body, another method) goes to Koa, which answers
 * it as for any route.
 *
 * Off (SPEEDUPS=off): no front handler; Koa serves every route.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../kernel/log';
import type { Route } from '../kernel/route';
import type { FrontHandler } from '../http/app';
import { httpMetrics } from '../http/metrics';
import { problemBody } from '../http/problem';
import { parseQuery, readRequestBody } from '../http/request';
import { ClientGone, requestIdOf, runRoute, toApiError } from '../http/route-call';

/** The front handler of the app (http/app.ts asks for it): serves a direct route's request, or declines. */
export function directRoutes(routes: readonly Route[], options: { log: Logger; strictContracts: boolean }): FrontHandler {
  const table = directTable(routes);
  return (req, res) => {
    const route = directRouteFor(table, req);
    if (!route) return false;
    void serveDirect(route, req, res, options);
    return true;
  };
}

/** The direct routes by path. */
export function directTable(routes: readonly Route[]): ReadonlyMap<string, Route> {
  const byPath = new Map<string, Route>();
  for (const route of routes) {
    if (!route.direct) continue;
    if (route.method !== 'post' || route.path.includes(':'))
      throw new Error(`${route.path}: only POST routes without path parameters may be direct`);
    byPath.set(route.path, route);
  }
  return byPath;
}

/** The direct route that serves this request, or none: Koa serves it. */
export function directRouteFor(
  table: ReadonlyMap<string, Route>,
  req: Pick<IncomingMessage, 'method' | 'url' | 'headers'>,
): Route | undefined {
  if (req.method !== 'POST' || req.headers['content-encoding'] !== undefined) return undefined;
  return table.get(req.url ?? '');
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json';

async function serveDirect(
  route: Route,
  req: IncomingMessage,
  res: ServerResponse,
  { log, strictContracts }: { log: Logger; strictContracts: boolean },
): Promise<void> {
  const started = process.hrtime.bigint();
  const requestId = requestIdOf(req.headers['x-request-id'], randomUUID);
  const gone = new ClientGone();
  res.once('close', () => gone.closed(res.writableFinished));
  let status: number;
  let headers: Record<string, string>;
  let type = JSON_TYPE;
  let payload: string | undefined;
  try {
    const result = await runRoute(
      route,
      {
        authorization: req.headers.authorization || undefined,
        params: {},
        // A direct request has no query string (one with a query goes to Koa): nothing to parse
        // unless the route declares a query schema, whose defaults then apply.
        query: () => (route.query ? parseQuery(route.query, { query: {} }) : {}),
        body: () => readRequestBody(req, route.body),
        gone,
      },
      strictContracts,
    );
    status = result.status;
    headers = result.headers;
    if (result.body !== undefined) payload = JSON.stringify(result.body);
  } catch (error) {
    const apiError = toApiError(error, requestId, log);
    status = apiError.status;
    headers = apiError.headers;
    type = PROBLEM_TYPE;
    payload = JSON.stringify(problemBody(apiError, route.path));
  }
  // Headers as one flat list to writeHead: Node then builds no header map for the response.
  const head = ['X-Request-Id', requestId, ...Object.entries(headers).flat()];
  if (payload !== undefined) head.push('Content-Type', type, 'Content-Length', String(Buffer.byteLength(payload)));
  res.writeHead(status, head);
  res.end(payload);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  httpMetrics.observe('POST', route.path, status, seconds);
  // Only method, route template, status and timing: never a header, a body or a query string.
  log.debug({ requestId, method: 'POST', route: route.path, status, ms: seconds * 1000 }, 'request');
}
