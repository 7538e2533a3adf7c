import type { Context } from 'koa';
import { bodyParser } from '@koa/bodyparser';
import { z } from 'zod';
import type { Deps } from '../deps';
import type { Authenticator, CredentialKind, Principal } from './auth';
import { findHostileInput } from './input-guard';
import { ApiError, type FieldError, type ProblemCode } from './problem';

export type Method = 'get' | 'post' | 'patch' | 'delete';

type EmptyObject = z.ZodObject<Record<string, never>>;

const NO_QUERY = z.strictObject({});

export interface RouteSpec<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, A extends CredentialKind> {
  method: Method;
  /** Koa-style path, e.g. `/api/grants/:grantId`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** Who may call: an authenticator, or null for a public route. */
  auth: Authenticator<A> | null;
  params?: P;
  query?: Q;
  body?: B;
  success: { status: 200 | 201 | 204; description: string; schema?: z.ZodType };
  /** Problem codes this route may answer with, besides the ones every route can give. */
  errors?: readonly ProblemCode[];
}

export interface RouteRequest<P, Q, B, A extends CredentialKind> {
  params: P;
  query: Q;
  body: B;
  principal: Extract<Principal, { kind: A }>;
  deps: Deps;
  ctx: Context;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Route extends RouteSpec<z.ZodType, z.ZodType, z.ZodType, CredentialKind> {
  run(ctx: Context, deps: Deps): Promise<void>;
}

const BODY_LIMIT = '64kb';

/** What the JSON body parser (co-body) throws, as the problem CONTRACT §1 asks for. */
function bodyParserError(error: Error & { type?: string; status?: number }): ApiError {
  if (error.type === 'entity.too.large' || error.status === 413) return new ApiError('payload_too_large');
  if (error.type === 'encoding.unsupported' || error.status === 415) return new ApiError('unsupported_media_type');
  return new ApiError('invalid_request', 'the body is not valid JSON', { errors: [{ path: 'body', message: 'malformed JSON' }] });
}

/**
 * Parses a JSON body of any method (a DELETE or GET with a body is read, and refused, like any
 * other). It runs inside the route, after authentication, so an unauthenticated caller learns
 * nothing from how its body is judged.
 */
const parseJsonBody = bodyParser({
  enableTypes: ['json'],
  jsonLimit: BODY_LIMIT,
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

function parse<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const hostile = findHostileInput(value, where);
  if (hostile) throw new ApiError('invalid_request', `the ${where} is invalid`, { errors: [hostile] });
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new ApiError('invalid_request', `the ${where} is invalid`, { errors: fieldErrors(result.error, where) });
  }
  return result.data;
}

function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
}

/** Body rules of CONTRACT §1: JSON only (415 otherwise); a body-less route takes none or `{}`. */
async function readBody(ctx: Context, schema: z.ZodType | undefined): Promise<unknown> {
  const sent = hasBody(ctx);
  if (sent && !ctx.is('application/json')) {
    throw new ApiError('unsupported_media_type', 'send the body as application/json');
  }
  if (sent) await parseJsonBody(ctx as never, async () => undefined);
  const raw = (ctx.request as { body?: unknown }).body;
  if (!schema) {
    const empty = raw === undefined || (typeof raw === 'object' && raw !== null && Object.keys(raw).length === 0);
    if (sent && !empty) throw new ApiError('invalid_request', 'this endpoint takes no request body');
    return undefined;
  }
  if (!sent) throw new ApiError('unsupported_media_type', 'a JSON body is required');
  return parse(schema, raw, 'body');
}

/**
 * A route is a schema-guarded handler: credentials, path, query and body are checked before the
 * handler runs, and the same schemas produce the OpenAPI document.
 */
export function defineRoute<
  A extends CredentialKind,
  P extends z.ZodType = EmptyObject,
  Q extends z.ZodType = EmptyObject,
  B extends z.ZodType = z.ZodUndefined,
>(
  spec: RouteSpec<P, Q, B, A>,
  handler: (request: RouteRequest<z.infer<P>, z.infer<Q>, z.infer<B>, A>) => Promise<RouteResult>,
): Route {
  return {
    ...(spec as unknown as RouteSpec<z.ZodType, z.ZodType, z.ZodType, CredentialKind>),
    async run(ctx, deps) {
      // Who calls comes first: nothing about the request is judged for an unauthenticated caller.
      const principal = spec.auth ? await spec.auth.authenticate(ctx, deps) : undefined;
      const params = spec.params ? parse(spec.params, ctx.params, 'path') : {};
      // A route without a query schema takes no query parameters (an unknown one is a 400).
      const query = parse(spec.query ?? NO_QUERY, ctx.query, 'query');
      const body = await readBody(ctx, spec.body);
      const result = await handler({
        params,
        query,
        body,
        principal: principal as Extract<Principal, { kind: A }>,
        deps,
        ctx,
      } as RouteRequest<z.infer<P>, z.infer<Q>, z.infer<B>, A>);
      ctx.status = result.status ?? spec.success.status;
      for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
      if (result.body !== undefined) ctx.body = result.body;
    },
  };
}
