import { randomUUID } from 'node:crypto';
import Bourne from '@hapi/bourne';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../kernel/errors';
import type { Logger } from '../kernel/log';
import type { Route } from '../kernel/route';
import { httpMetrics } from './metrics';
import { problemBody } from './problem';
import { BODY_LIMIT_BYTES, bodyParserError, hasBody, isJsonContentType, judgeBody, parseQuery, unsupportedMediaType } from './request';
import { ClientGone, requestIdOf, runRoute, toApiError } from './route-call';

/**
 * Routes declared `direct` (the broker check, called before every tool call of every agent) are
 * served on Node's own HTTP server, in front of Koa: Koa's context, router, middleware chain and
 * body parser were about a third of a check's CPU. Only the framing differs: authentication,
 * schemas, the handler, contract checks and problem documents are the same code as on Koa
 * (./route-call.ts). Anything unusual for such a route (a query string, a compressed body, another
 * method) goes to Koa, which answers it as for any route.
 */
export function directRoutes(
  routes: readonly Route[],
  options: { log: Logger; strictContracts: boolean },
): (req: IncomingMessage, res: ServerResponse) => boolean {
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
        body: () => readJsonBody(req, route),
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

/** The body rules of request.ts (JSON only, 64 KiB, strict JSON: an object or an array). */
async function readJsonBody(req: IncomingMessage, route: Route): Promise<unknown> {
  const sent = hasBody(req.headers);
  if (!sent) return judgeBody(false, undefined, route.body);
  if (!isJsonContentType(req.headers['content-type'])) throw unsupportedMediaType();
  return judgeBody(true, parseStrictJson(await readText(req)), route.body);
}

/** JSON whitespace (RFC 8259: space, tab, LF, CR), then an object or an array. */
const STRICT_JSON_START = /^[ \t\n\r]*[[{]/;

function parseStrictJson(text: string): unknown {
  // As co-body's strict mode (the Koa path): an empty body is `{}`, anything else an object or array.
  if (text === '') return {};
  if (!STRICT_JSON_START.test(text)) throw bodyParserError(new Error('not an object or array'));
  try {
    // Bourne, as co-body: a `__proto__` key is refused as malformed, not parsed into an own field.
    return Bourne.parse(text, { protoAction: 'error' });
  } catch (error) {
    throw bodyParserError(error as Error);
  }
}

function readText(req: IncomingMessage): Promise<string> {
  if (Number(req.headers['content-length'] ?? 0) > BODY_LIMIT_BYTES) return Promise.reject(new ApiError('payload_too_large'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT_BYTES) {
        chunks.push(chunk);
        return;
      }
      // Too large: stop keeping it (the rest is drained and dropped by Node) and refuse.
      req.off('data', onData);
      req.resume();
      reject(new ApiError('payload_too_large'));
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size).toString('utf8')));
    req.once('error', () => reject(bodyParserError(new Error('the request was aborted'))));
  });
}
