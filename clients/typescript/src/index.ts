import createFetchClient from 'openapi-fetch';
import { ApiProblem, ApprovalRequired, CallDenied, OutcomeNotRecorded } from './errors';
import type { components, paths } from './schema';
import { OutcomeBatcher, type OutcomeBatchOptions, type OutcomeReport, type OutcomeTrouble } from './outcomes';
import { retryingFetch } from './transport';

export { ApiProblem, ApprovalRequired, CallDenied, OutcomeNotRecorded, type DenialExplanation } from './errors';
export { parseRetryAfter } from './transport';
export type { OutcomeBatchOptions, OutcomeReport, OutcomeStatus, OutcomeTrouble } from './outcomes';
export type { components, paths } from './schema';

export type Grant = components['schemas']['Grant'];
export type Approval = components['schemas']['Approval'];
export type AgentEvent = components['schemas']['Event'];
export type CheckResult = components['schemas']['BrokerCheckResult'];
export type CallRecord = components['schemas']['CallRecord'];
export type CreateGrant = components['schemas']['CreateGrant'];
export type AttenuateGrant = components['schemas']['AttenuateGrant'];
export type Pod = components['schemas']['Pod'];
export type PodMember = components['schemas']['PodMember'];
export type Connection = components['schemas']['Connection'];

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8080 (GRANT_BROKER_URL) */
  baseUrl: string;
  /** A human JWT, an agent's `art_…` or a broker's `bkt_…` token (GRANT_BROKER_TOKEN). */
  token: string;
  /**
   * Retries (default 3) of a 503, of a 429 with `Retry-After`, and of a network failure where
   * repeating cannot do a thing twice (see `retryingFetch`): a POST is never re-sent after the
   * service may have acted on it.
   */
  retries?: number;
  /** The longest `Retry-After` waited for (default 30 s); an answer asking for longer is returned as is. */
  maxRetryAfterMs?: number;
  /**
   * `withCheck` made the call but could not report its outcome. Default: a console warning. The
   * call's result is returned all the same (with the error as `outcomeError`), and a failed call's
   * own error is thrown all the same.
   */
  onOutcomeError?: (error: OutcomeNotRecorded) => void;
  /**
   * `withCheck` reports outcomes in batches off the call's path (`POST /api/broker/outcomes`)
   * instead of one request before it returns: the call's result comes back as soon as the call
   * is made. Outcomes still held when the process ends are not recorded (their records stay
   * `pending`): call `flushOutcomes()` before exiting. Trouble goes to `onOutcomeTrouble`.
   */
  batchOutcomes?: OutcomeBatchOptions;
  /** With `batchOutcomes`: an outcome refused or dropped, or the service not answering. Default: a console warning. */
  onOutcomeTrouble?: (trouble: OutcomeTrouble) => void;
  fetch?: typeof fetch;
  /**
   * The class each request is built with before `fetch` is handed it (openapi-fetch's `Request`):
   * the platform's by default. A `fetch` of one's own may take a lighter one (whose body is a
   * string it can send again), sparing a stream per request; its `method` and `signal` are read.
   */
  Request?: typeof Request;
}

/** What `withCheck` returns: the call's result, the check that allowed it, and a report that failed, if one did. */
export interface CheckedCall<T> {
  result: T;
  check: CheckResult;
  outcomeError?: OutcomeNotRecorded;
}

/** One event of the agent's loop: `ack` it once its result is persisted, before `leaseExpiresAt`. */
export interface LeasedEvent {
  event: AgentEvent;
  /** When the lease taken by the poll ends at the latest (client clock, counted from before the poll). */
  leaseExpiresAt: number;
  ack: () => Promise<void>;
}

export interface EventsOptions {
  /** Long-poll wait, 0..20000 ms (default 20000). */
  waitMs?: number;
  /** Events per poll, 1..100 (default 10). */
  limit?: number;
  /** Ends the iteration, the poll in flight included. */
  signal?: AbortSignal;
  /** The service's EVENT_VISIBILITY_TIMEOUT_MS (default 30000): how long a poll's lease lasts. */
  leaseMs?: number;
  /** End the iteration at the first poll that finds nothing (drain what is pending, then stop). */
  untilIdle?: boolean;
}

/**
 * The typed client: `api` is openapi-fetch over the service's own OpenAPI document (every path,
 * body and answer typed), and the helpers below cover the loops users would otherwise write by
 * hand. Problems come back as `ApiProblem` carrying the service's `code`.
 */
export function createClient(options: ClientOptions) {
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
  const api = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { Authorization: `Bearer ${options.token}` },
    fetch: retryingFetch({ retries: options.retries ?? 3, baseDelayMs: 200, maxRetryAfterMs, fetch: options.fetch ?? fetch }),
    ...(options.Request ? { Request: options.Request } : {}),
  });
  const onOutcomeError = options.onOutcomeError ?? ((error: OutcomeNotRecorded) => console.warn(error.message));

  /** The body of a 2xx, or the problem document as an ApiProblem. */
  async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (response.ok) return data as T;
    const problem = (error ?? {}) as { code?: string; detail?: string };
    throw new ApiProblem(
      response.status,
      problem.code ?? 'unknown',
      problem.detail ?? response.statusText,
      problem as Record<string, unknown>,
    );
  }

  /**
   * The broker's loop: check, make the call only on allow, record its outcome.
   * A deny throws CallDenied, a call waiting for a human throws ApprovalRequired (re-send with
   * `approvalId` once `waitForApproval` says approved). The subject's own token is forwarded.
   *
   * Reporting the outcome never changes what the call did: if the report fails after the call
   * succeeded, the result is returned with `outcomeError` set (and `onOutcomeError` is called);
   * if the call failed, its own error is thrown whether or not the report went through.
   */
  async function withCheck<T>(
    call: { grantId: string; tool: string; args: Record<string, unknown>; subjectToken: string; approvalId?: string; credential?: boolean },
    run: (check: CheckResult) => Promise<T>,
  ): Promise<CheckedCall<T>> {
    const check = await unwrap(api.POST('/api/broker/check', { body: call }));
    if (check.decision === 'approval_required') {
      throw new ApprovalRequired(check.approvalId!, check.callId, check.approval!.expiresAt, check.approval!.consoleUrl);
    }
    if (check.decision !== 'allow') throw new CallDenied(check.reason, check.callId, check.retryAfterMs, check.message, check.explanation);
    const started = Date.now();
    let result: T;
    try {
      result = await run(check);
    } catch (error) {
      await reportOutcome(check.callId, 'failed', Date.now() - started, errorCodeOf(error));
      throw error;
    }
    const outcomeError = await reportOutcome(check.callId, 'succeeded', Date.now() - started);
    return outcomeError ? { result, check, outcomeError } : { result, check };
  }

  const batcher =
    options.batchOutcomes &&
    new OutcomeBatcher(
      async (batch) => (await unwrap(api.POST('/api/broker/outcomes', { body: { outcomes: batch.map(fitted) } }))).results,
      options.onOutcomeTrouble ?? ((trouble) => console.warn(`grant broker outcome: ${trouble.kind}`)),
      options.batchOutcomes,
    );

  /** recordOutcome that never throws: a failure is handed to onOutcomeError and returned. */
  async function reportOutcome(callId: string, outcome: 'succeeded' | 'failed', durationMs: number, errorCode?: string) {
    if (batcher) {
      batcher.add({ callId, outcome, durationMs, ...(errorCode ? { errorCode } : {}) });
      return undefined;
    }
    try {
      await recordOutcome(callId, outcome, durationMs, errorCode);
      return undefined;
    } catch (cause) {
      const error = new OutcomeNotRecorded(callId, outcome, cause);
      try {
        onOutcomeError(error);
      } catch {
        // A throwing hook must not turn the call's result into a failure either.
      }
      return error;
    }
  }

  function recordOutcome(callId: string, outcome: 'succeeded' | 'failed', durationMs?: number, errorCode?: string) {
    const { callId: _callId, ...body } = fitted({ callId, outcome, durationMs, errorCode });
    return unwrap(api.POST('/api/broker/calls/{callId}/outcome', { params: { path: { callId } }, body }));
  }

  /** With `batchOutcomes`: resolves once every outcome held so far is acknowledged (or rejects when `signal` aborts first). */
  async function flushOutcomes(signal?: AbortSignal): Promise<void> {
    await batcher?.flush(signal);
  }

  /** The broker waits for a human's decision (long polls of up to 20 s each). */
  async function waitForApproval(approvalId: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Approval> {
    const deadline = Date.now() + (options.timeoutMs ?? 15 * 60_000);
    for (;;) {
      const waitMs = Math.max(0, Math.min(20_000, deadline - Date.now()));
      const approval = await unwrap(
        api.GET('/api/broker/approvals/{approvalId}', { params: { path: { approvalId }, query: { waitMs } }, signal: options.signal }),
      );
      if (approval.state !== 'pending' || Date.now() >= deadline) return approval;
    }
  }

  /**
   * The agent's loop (spec §6): events, oldest first, long-polled; each with `ack`. Delivery is at
   * least once: an event not acked within its lease comes back with `deliveryCount` + 1, so handle
   * it idempotently and ack only after its result is persisted.
   *
   * Lease awareness: a poll leases its whole page at once. An event whose lease has already run
   * out by the time the loop reaches it (the events before it took that long) is not yielded: the
   * service may already be delivering it again, to this loop or another one, and it comes back.
   * Aborting `signal` ends the iteration at once, also during a long poll.
   */
  async function* events(options: EventsOptions = {}): AsyncGenerator<LeasedEvent, void, undefined> {
    const { signal } = options;
    const leaseMs = options.leaseMs ?? 30_000;
    const query = { waitMs: options.waitMs ?? 20_000, limit: options.limit ?? 10 };
    while (!signal?.aborted) {
      const polledAt = Date.now();
      let page: { items: AgentEvent[] };
      try {
        page = await unwrap(api.GET('/api/agents/runtime/events', { params: { query }, signal }));
      } catch (error) {
        if (signal?.aborted) return;
        throw error;
      }
      if (page.items.length === 0 && options.untilIdle) return;
      const leaseExpiresAt = polledAt + leaseMs;
      for (const event of page.items) {
        if (signal?.aborted) return;
        if (Date.now() >= leaseExpiresAt) continue;
        yield { event, leaseExpiresAt, ack: () => ack(event.id) };
      }
    }
  }

  async function ack(eventId: string): Promise<void> {
    await unwrap(api.POST('/api/agents/runtime/events/{eventId}/ack', { params: { path: { eventId } } }));
  }

  return {
    api,
    unwrap,
    withCheck,
    recordOutcome,
    flushOutcomes,
    /** Outcomes held by `batchOutcomes`, not yet acknowledged. */
    pendingOutcomes: () => batcher?.pending ?? 0,
    waitForApproval,
    events,
    ack,
  };
}

export type GrantBrokerClient = ReturnType<typeof createClient>;

/** The service takes 0..86400000 ms and a code of [A-Za-z0-9_.:-]{1,100}: fit them rather than lose the report. */
function fitted({ callId, outcome, durationMs, errorCode }: OutcomeReport): OutcomeReport {
  return {
    callId,
    outcome,
    ...(durationMs === undefined ? {} : { durationMs: Math.min(86_400_000, Math.max(0, Math.round(durationMs))) }),
    ...(errorCode ? { errorCode: errorCode.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 100) } : {}),
  };
}

/** The code a failed call reports: a string `code` of the error when it has one. */
function errorCodeOf(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
}
