import createFetchClient from 'openapi-fetch';
import { ApiProblem, ApprovalRequired, CallDenied } from './errors';
import type { components, paths } from './schema';
import { retryingFetch } from './transport';

export { ApiProblem, ApprovalRequired, CallDenied } from './errors';
export type { components, paths } from './schema';

export type Grant = components['schemas']['Grant'];
export type Approval = components['schemas']['Approval'];
export type AgentEvent = components['schemas']['Event'];
export type CheckResult = components['schemas']['BrokerCheckResult'];

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8080 (GRANT_BROKER_URL) */
  baseUrl: string;
  /** A human JWT, an agent's `art_…` or a broker's `bkt_…` token (GRANT_BROKER_TOKEN). */
  token: string;
  /** Retries of a 503 or a network failure (default 3). */
  retries?: number;
  fetch?: typeof fetch;
}

/**
 * The typed client: `api` is openapi-fetch over the service's own OpenAPI document (every path,
 * body and answer typed), and the helpers below cover the loops users would otherwise write by
 * hand. Problems come back as `ApiProblem` carrying the service's `code`.
 */
export function createClient(options: ClientOptions) {
  const api = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { Authorization: `Bearer ${options.token}` },
    fetch: retryingFetch({ retries: options.retries ?? 3, baseDelayMs: 200, fetch: options.fetch ?? fetch }),
  });

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
   * The broker's loop (CONTRACT §5): check, make the call only on allow, record its outcome.
   * A deny throws CallDenied, a call waiting for a human throws ApprovalRequired (re-send with
   * `approvalId` once `waitForApproval` says approved). The subject's own token is forwarded.
   */
  async function withCheck<T>(
    call: { grantId: string; tool: string; args: Record<string, unknown>; subjectToken: string; approvalId?: string },
    run: () => Promise<T>,
  ): Promise<{ result: T; check: CheckResult }> {
    const check = await unwrap(api.POST('/api/broker/check', { body: call }));
    if (check.decision === 'approval_required') {
      throw new ApprovalRequired(check.approvalId!, check.callId, check.approval!.expiresAt);
    }
    if (check.decision !== 'allow') throw new CallDenied(check.reason, check.callId, check.retryAfterMs, check.message);
    const started = Date.now();
    try {
      const result = await run();
      await recordOutcome(check.callId, 'succeeded', Date.now() - started);
      return { result, check };
    } catch (error) {
      await recordOutcome(check.callId, 'failed', Date.now() - started, (error as { code?: string }).code);
      throw error;
    }
  }

  function recordOutcome(callId: string, outcome: 'succeeded' | 'failed', durationMs: number, errorCode?: string) {
    return unwrap(
      api.POST('/api/broker/calls/{callId}/outcome', {
        params: { path: { callId } },
        body: { outcome, durationMs, ...(errorCode ? { errorCode: String(errorCode).slice(0, 64) } : {}) },
      }),
    );
  }

  /** The broker waits for a human's decision (long polls of up to 20 s each). */
  async function waitForApproval(approvalId: string, options: { timeoutMs?: number } = {}): Promise<Approval> {
    const deadline = Date.now() + (options.timeoutMs ?? 15 * 60_000);
    for (;;) {
      const waitMs = Math.max(0, Math.min(20_000, deadline - Date.now()));
      const approval = await unwrap(api.GET('/api/broker/approvals/{approvalId}', { params: { path: { approvalId }, query: { waitMs } } }));
      if (approval.state !== 'pending' || Date.now() >= deadline) return approval;
    }
  }

  /**
   * The agent's loop (spec §6): events, oldest first, long-polled. Each comes with `ack`; an event
   * not acked within its lease (30 s by default) comes back, so handle it idempotently.
   */
  async function* events(options: { waitMs?: number; limit?: number; signal?: AbortSignal } = {}) {
    while (!options.signal?.aborted) {
      const page = await unwrap(
        api.GET('/api/agents/runtime/events', { params: { query: { waitMs: options.waitMs ?? 20_000, limit: options.limit ?? 10 } } }),
      );
      for (const event of page.items) {
        yield {
          event,
          ack: () => unwrap(api.POST('/api/agents/runtime/events/{eventId}/ack', { params: { path: { eventId: event.id } } })),
        };
      }
    }
  }

  return { api, unwrap, withCheck, recordOutcome, waitForApproval, events };
}

export type GrantBrokerClient = ReturnType<typeof createClient>;
