import { isDependencyFailure } from '../kernel/dependency';
import { ApiError } from '../kernel/errors';
import type { Logger } from '../kernel/log';
import type { Principal } from '../kernel/principals';
import { errorCodesOf, type Route, type RouteRequest, type RouteResult } from '../kernel/route';
import { parseInput } from './request';

/**
 * One request for one route, whichever server read it (Koa, or Node's own for the direct routes):
 * the same order, the same schemas, the same contract checks, so the two paths cannot drift.
 */
export interface RouteCall {
  authorization: string | undefined;
  params: unknown;
  /** Parses the query against the route's schema (none: no parameters accepted). */
  query(): unknown;
  /** Reads and judges the body against the route's schema (the body rules of every route). */
  body(): Promise<unknown>;
  /** Whether the client went away before the answer (a long poll stops waiting). */
  readonly gone: ClientGone;
}

class ContractViolation extends Error {}

/** Authenticates, reads and validates the request, runs the handler; answers status, headers, body. */
export async function runRoute(
  route: Route,
  call: RouteCall,
  strict: boolean,
): Promise<Required<Omit<RouteResult<unknown>, 'body'>> & { body: unknown }> {
  // Who calls comes first: nothing about the request is judged for an unauthenticated caller.
  const principal = route.auth ? await route.auth.authenticate({ authorization: call.authorization }) : null;
  const params = route.params ? parseInput(route.params, call.params, 'path') : {};
  const query = call.query();
  const body = await call.body();
  let result: RouteResult<unknown>;
  try {
    result = await route.handle(new HandlerRequest(params, query, body, principal, call.gone));
  } catch (error) {
    if (strict && error instanceof ApiError && !errorCodesOf(route).includes(error.code)) {
      throw new ContractViolation(`${route.method.toUpperCase()} ${route.path} answered \`${error.code}\`, which it does not declare`);
    }
    throw error;
  }
  if (strict && route.success.schema && result.body !== undefined) {
    const checked = route.success.schema.safeParse(result.body);
    if (!checked.success) {
      throw new ContractViolation(
        `${route.method.toUpperCase()} ${route.path} answered a body its schema refuses: ${checked.error.message}`,
      );
    }
  }
  return { status: result.status ?? route.success.status, headers: result.headers ?? {}, body: result.body };
}

/** Maps anything thrown below to a problem; unknown errors are logged, never echoed. */
export function toApiError(error: unknown, requestId: string, log: Logger): ApiError {
  if (error instanceof ApiError) return error;
  if (isDependencyFailure(error)) {
    log.error({ err: error, requestId }, 'dependency unavailable');
    return new ApiError('dependency_unavailable');
  }
  log.error({ err: error, requestId }, 'unhandled error');
  return new ApiError('internal_error', 'an unexpected error occurred; quote the request id to an operator');
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's X-Request-Id when it is a sane token, else a new one. */
export function requestIdOf(incoming: string | string[] | undefined, fresh: () => string): string {
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : fresh();
}

/**
 * What a handler is given. A class, whose getter lives once on its prototype: an object literal
 * with a getter gets a hidden class of its own, in the old generation, and the getter's closure
 * (with all the request it reaches) then survives every young-generation GC until a full one. On
 * the broker check that was half of what each scavenge copied, and a longer pause for every call
 * caught behind one (eslint's no-restricted-syntax keeps such literals out of src/).
 */
class HandlerRequest implements RouteRequest<unknown, unknown, unknown, Principal | null> {
  constructor(
    readonly params: unknown,
    readonly query: unknown,
    readonly body: unknown,
    readonly principal: Principal | null,
    private readonly gone: ClientGone,
  ) {}

  /** Made only when a handler asks for it (a long poll): see ClientGone. */
  get signal(): AbortSignal {
    return this.gone.signal;
  }
}

/**
 * An abort signal made only when a handler asks for it: most requests finish normally, and an
 * AbortController per request (aborted, with its DOMException, on every close) was a few percent
 * of a broker check's CPU.
 */
export class ClientGone {
  private controller: AbortController | undefined;
  private gone = false;

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.gone) this.controller.abort();
    return this.controller.signal;
  }

  /** The connection closed; `answered` when the whole response had been written first. */
  closed(answered: boolean): void {
    if (answered) return;
    this.gone = true;
    this.controller?.abort();
  }
}
