/**
 * A minimal client for the agent runtime API (spec §4.2, §6), on Node 20's fetch and nothing else:
 * the example agent uses the public HTTP API only, as any agent written elsewhere would.
 */

export interface AgentEvent {
  id: string;
  type: string;
  podId: string;
  occurredAt: string;
  deliveryCount: number;
  data: Record<string, unknown>;
}

/** A refusal from the service, with the problem document's stable `code`. */
export class RuntimeApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(`${status} ${code}: ${detail}`);
  }

  /** 401/403: the token is wrong, deleted, or the agent was uninstalled. Retrying will not help. */
  get credentialRejected(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

export class RuntimeClient {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly token: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  /** Leases up to `limit` events; waits up to `waitMs` for one when none is pending. */
  async poll(options: { limit?: number; waitMs?: number } = {}, signal?: AbortSignal): Promise<AgentEvent[]> {
    const query = new URLSearchParams({ limit: String(options.limit ?? 10), waitMs: String(options.waitMs ?? 0) });
    const body = (await this.request('GET', `/api/agents/runtime/events?${query}`, signal)) as { items: AgentEvent[] };
    return body.items;
  }

  /** Acknowledges an event; acking one again is fine (204). */
  async ack(eventId: string): Promise<void> {
    await this.request('POST', `/api/agents/runtime/events/${encodeURIComponent(eventId)}/ack`);
  }

  async installations(): Promise<unknown> {
    return this.request('GET', '/api/agents/runtime/installations');
  }

  private async request(method: string, path: string, signal?: AbortSignal): Promise<unknown> {
    const response = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      // The token goes in this header and nowhere else: never into a URL, a log line or a file.
      headers: { Authorization: `Bearer ${this.token}`, Accept: 'application/json' },
      signal,
    });
    if (response.status === 204) return undefined;
    const body = (await response.json().catch(() => ({}))) as { code?: string; detail?: string };
    if (!response.ok) throw new RuntimeApiError(response.status, body.code ?? 'unknown', body.detail ?? response.statusText);
    return body;
  }
}
