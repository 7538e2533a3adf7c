import type { z } from 'zod';
import { PROBLEMS, type ProblemCode } from './errors';
import type { CredentialKind, Principal } from './principals';

/**
 * A route's whole contract, declared beside its domain and free of any web framework: who may
 * call it, the schemas of its path, query, body and success answer (the same ones validate
 * requests, type the handler and write the OpenAPI document), and every problem code it may
 * answer with. src/http mounts routes on Koa; nothing else knows Koa.
 */
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** What an authenticator sees of a request. */
export interface RequestHead {
  authorization: string | undefined;
}

/**
 * How a route learns who calls it: the principal, or a thrown 401 (no valid credential) or 403
 * `credential_not_accepted` (a valid credential of another kind). `kinds` are the route's
 * security requirements in the OpenAPI document; an operator's token has none.
 */
export interface Authenticator<P extends Principal | null = Principal> {
  readonly kinds: readonly CredentialKind[];
  authenticate(head: RequestHead): Promise<P>;
}

export interface RouteSpec<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, S extends z.ZodType, A extends Principal | null> {
  method: Method;
  /** Koa-style path, e.g. `/api/grants/:grantId`. */
  path: string;
  /** Stable name of the operation for generated clients (camelCase). */
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Who may call: an authenticator, or null for a public route. */
  auth: Authenticator<A> | null;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * A multipart/form-data body instead of JSON (a file upload): the text fields and files it may
   * hold, each with its most bytes. The handler's `body` is then a FormBody; nothing else is read.
   */
  form?: FormSpec;
  success: { status: 200 | 201 | 204; description: string; schema?: S };
  /** Problem codes this route may answer with, besides the ones every route can give. */
  errors?: readonly ProblemCode[];
  /**
   * Hot path: with the speed-ups on, also served on Node's HTTP server ahead of the web framework,
   * with the same contract (src/speedups/direct-http.ts). Only for a POST without path parameters.
   */
  direct?: boolean;
}

export interface FormSpec {
  fields: Record<string, { maxBytes: number; description: string }>;
  files: Record<string, { maxBytes: number; description: string }>;
}

/** A form as read: each field's text and each file's bytes (only those the route declares). */
export interface FormBody {
  fields: Record<string, string>;
  files: Record<string, Buffer>;
}

export interface RouteRequest<P, Q, B, A> {
  params: P;
  query: Q;
  body: B;
  principal: A;
  /** Aborted when the client goes away (a long poll stops waiting for it). */
  signal: AbortSignal;
}

export interface RouteResult<S> {
  status?: number;
  body?: S;
  headers?: Record<string, string>;
}

/** A route with its types erased, as the HTTP layer and the OpenAPI writer see it. */
export interface Route extends RouteSpec<z.ZodType, z.ZodType, z.ZodType, z.ZodType, Principal | null> {
  handle(request: RouteRequest<unknown, unknown, unknown, Principal | null>): Promise<RouteResult<unknown>>;
}

type EmptyObject = z.ZodObject<Record<string, never>>;

/** Declares a route; the handler is typed from the schemas (its answer from the success schema). */
export function defineRoute<
  A extends Principal | null = null,
  P extends z.ZodType = EmptyObject,
  Q extends z.ZodType = EmptyObject,
  B extends z.ZodType = z.ZodUndefined,
  S extends z.ZodType = z.ZodUnknown,
>(
  spec: RouteSpec<P, Q, B, S, A>,
  handler: (request: RouteRequest<z.output<P>, z.output<Q>, z.output<B>, A>) => Promise<RouteResult<z.input<S>>>,
): Route {
  return { ...(spec as unknown as Route), handle: handler as Route['handle'] };
}

/** Codes any route can answer with, given what it declares; then its own. */
export function errorCodesOf(route: Pick<Route, 'auth' | 'body' | 'path' | 'errors'>): ProblemCode[] {
  const codes: ProblemCode[] = ['internal_error', 'dependency_unavailable', 'invalid_request', 'headers_too_large'];
  if (route.auth) codes.push('unauthenticated', 'credential_not_accepted');
  // Bodies are judged on every route: a route without one refuses any but none or `{}`.
  codes.push('payload_too_large', 'unsupported_media_type');
  if (route.path.includes(':')) codes.push('not_found');
  return [...new Set([...codes, ...(route.errors ?? [])])];
}

export function statusOf(code: ProblemCode): number {
  return PROBLEMS[code].status;
}

/** Builds the usual authenticator of a route: bearer credentials of these kinds, looked up each time. */
export interface CredentialAuthenticators {
  credentials<K extends CredentialKind>(...kinds: K[]): Authenticator<Extract<Principal, { kind: K }>>;
  /**
   * A person or an agent, where the agent may also present an MCP host's access token (CONTRACT
   * §20): its principal then carries `onlyGrantId`, the one grant the route may serve it.
   */
  grantHolders(): Authenticator<Extract<Principal, { kind: 'human' | 'agent' }>>;
}
