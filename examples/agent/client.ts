/**
 * The agent runtime API (spec §4.2, §6) through the typed SDK (`clients/typescript`): the example
 * agent uses the public HTTP API only, as any agent written elsewhere would.
 */
import { ApiProblem, createClient, type AgentEvent, type GrantBrokerClient } from '../../clients/typescript/src';

export type { AgentEvent };
/** A refusal from the service, with the problem document's stable `code` (`credentialRejected` on 401/403). */
export { ApiProblem as RuntimeApiError };

export class RuntimeClient {
  private readonly sdk: GrantBrokerClient;

  constructor(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch) {
    // The token goes in the Authorization header and nowhere else: never a URL, a log line or a
    // file. No retries here: the work loop backs off on its own terms.
    this.sdk = createClient({ baseUrl, token, fetch: fetchImpl, retries: 0 });
  }

  /** Leases up to `limit` events; waits up to `waitMs` for one when none is pending. */
  async poll(options: { limit?: number; waitMs?: number } = {}, signal?: AbortSignal): Promise<AgentEvent[]> {
    const query = { limit: options.limit ?? 10, waitMs: options.waitMs ?? 0 };
    const page = await this.sdk.unwrap(this.sdk.api.GET('/api/agents/runtime/events', { params: { query }, signal }));
    return page.items;
  }

  /** Acknowledges an event; acking one again is fine (204). */
  async ack(eventId: string): Promise<void> {
    await this.sdk.unwrap(this.sdk.api.POST('/api/agents/runtime/events/{eventId}/ack', { params: { path: { eventId } } }));
  }

  async installations(): Promise<unknown> {
    return this.sdk.unwrap(this.sdk.api.GET('/api/agents/runtime/installations'));
  }
}
