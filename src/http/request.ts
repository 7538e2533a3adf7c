import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { bodyParser } from '@koa/bodyparser';
import Bourne from '@hapi/bourne';
import { z } from 'zod';
import { ApiError, type FieldError } from '../kernel/errors';
import { findHostileInput } from './input-guard';

/**
 * Reading a request's path, query and body for a route: the hostile-input guard first, then the
 * route's schema, every failure a 400 naming its paths.
 */
export const BODY_LIMIT_BYTES = 64 * 1024;
const NO_QUERY = z.strictObject({});

/** What the JSON body parser (co-body) throws, as the problem document every refusal is. */
export function bodyParserError(error: Error & { type?: string; status?: number }): ApiError {
  if (error.type === 'entity.too.large' || error.status === 413) return new ApiError('payload_too_large');
  if (error.type === 'encoding.unsupported' || error.status === 415) return new ApiError('unsupported_media_type');
  return new ApiError('invalid_request', 'the body is not valid JSON', { errors: [{ path: 'body', message: 'malformed JSON' }] });
}

/**
 * Parses a JSON body of any method (a DELETE or GET with a body is read, and refused, like any
 * other). It runs after authentication, so an unauthenticated caller learns nothing from how its
 * body is judged.
 */
const parseJsonBody = bodyParser({
  enableTypes: ['json'],
  jsonLimit: BODY_LIMIT_BYTES,
  jsonStrict: true,
  encoding: 'utf-8',
  parsedMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
  onError: (error) => {
    throw bodyParserError(error);
  },
});

function fieldErrors(error: z.ZodError, prefix: string): FieldError[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter(Boolean).join('.'),
    message: issue.message,
  }));
}

export function parseInput<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const hostile = findHostileInput(value, where);
  if (hostile) throw new ApiError('invalid_request', `the ${where} is invalid`, { errors: [hostile] });
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new ApiError('invalid_request', `the ${where} is invalid`, { errors: fieldErrors(result.error, where) });
  }
  return result.data;
}

/** A route without a query schema takes no query parameters (an unknown one is a 400). */
export function parseQuery(schema: z.ZodType | undefined, ctx: Pick<Context, 'query'>): unknown {
  return parseInput(schema ?? NO_QUERY, ctx.query, 'query');
}

/** Whether a request carries a body at all, from its framing headers. */
export function hasBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  const length = headers['content-length'] ?? '';
  return (length !== '' && length !== '0') || (headers['transfer-encoding'] ?? '') !== '';
}

/** Content-Type application/json, any parameters (a charset) allowed. */
export function isJsonContentType(header: string | undefined): boolean {
  return (header ?? '').split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

export function unsupportedMediaType(): ApiError {
  return new ApiError('unsupported_media_type', 'send the body as application/json');
}

/** Body rules: JSON only (415 otherwise); a body-less route takes none or `{}`. */
export async function readBody(ctx: Context, schema: z.ZodType | undefined): Promise<unknown> {
  const sent = hasBody(ctx.headers as Record<string, string | undefined>);
  if (sent && !ctx.is('application/json')) throw unsupportedMediaType();
  if (sent) await parseJsonBody(ctx as never, async () => undefined);
  return judgeBody(sent, (ctx.request as { body?: unknown }).body, schema);
}

/**
 * The same body rules read from Node's own request, without Koa (the routes served ahead of it:
 * src/speedups/direct-http.ts). It takes no compressed body: a caller sends one to Koa instead.
 */
export async function readRequestBody(req: IncomingMessage, schema: z.ZodType | undefined): Promise<unknown> {
  const sent = hasBody(req.headers);
  if (!sent) return judgeBody(false, undefined, schema);
  if (!isJsonContentType(req.headers['content-type'])) throw unsupportedMediaType();
  return judgeBody(true, parseStrictJson(await readText(req)), schema);
}

/** JSON whitespace (RFC 8259: space, tab, LF, CR), then an object or an array. */
const STRICT_JSON_START = /^[ \t\n\r]*[[{]/;

/**
 * As co-body's strict mode (the Koa path): an empty body is `{}`, anything else an object or
 * array. One leading UTF-8 byte order mark is dropped first, as the Koa path's decoder drops it
 * (RFC 8259 §8.1 lets a parser ignore it; it carries nothing): a second, or one after whitespace,
 * is not JSON.
 */
function parseStrictJson(raw: string): unknown {
  const text = raw.startsWith('\ufeff') ? raw.slice(1) : raw;
  if (text === '') return {};
  if (!STRICT_JSON_START.test(text)) throw bodyParserError(new Error('not an object or array'));
  try {
    // Bourne, as co-body: a `__proto__` key is refused as malformed, not parsed into an own field.
    return Bourne.parse(text, { protoAction: 'error' });
  } catch (error) {
    throw bodyParserError(error as Error);
  }
}

/** The body as UTF-8 text, `limit` bytes at most (413 past it, as co-body). */
export function readText(req: IncomingMessage, limit = BODY_LIMIT_BYTES): Promise<string> {
  if (Number(req.headers['content-length'] ?? 0) > limit) return Promise.reject(new ApiError('payload_too_large'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
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

/** The parsed body (or none) against the route's schema; `raw` is undefined when none was sent. */
export function judgeBody(sent: boolean, raw: unknown, schema: z.ZodType | undefined): unknown {
  if (!schema) {
    const empty = raw === undefined || (typeof raw === 'object' && raw !== null && Object.keys(raw).length === 0);
    if (sent && !empty) throw new ApiError('invalid_request', 'this endpoint takes no request body');
    return undefined;
  }
  if (!sent) throw new ApiError('unsupported_media_type', 'a JSON body is required');
  return parseInput(schema, raw, 'body');
}
