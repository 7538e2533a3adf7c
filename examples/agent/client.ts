/**
 * The agent runtime API (spec §4.2, §6) through the typed SDK (`clients/typescript`): the example
 * agent uses the public HTTP API only, as any agent written elsewhere would.
 */
import {
  ApiProblem,
  createClient,
  type AgentEvent,
  type EventsOptions,
  type GrantBrokerClient,
  type LeasedEvent,
} from '@grant-broker/client';

export type { AgentEvent, LeasedEvent };
/** A refusal from the service, with the problem document's stable `code` (`credentialRejected` on 401/403). */
export { ApiProblem as RuntimeApiError };

export class RuntimeClient {
  readonly sdk: GrantBrokerClient;

  constructor(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch) {
    // The token goes in the Authorization header and nowhere else: never a URL, a log line or a
    // file. No retries here: the work loop backs off on its own terms.
    this.sdk = createClient({ baseUrl, token, fetch: fetchImpl, retries: 0 });
  }

  /**
   * The SDK's event iterator: long polls, each event with its `ack`, events whose lease ran out
   * before their turn skipped (they come back), the signal reaching the poll in flight.
   */
  events(options: EventsOptions = {}): AsyncGenerator<LeasedEvent, void, undefined> {
    return this.sdk.events(options);
  }

  /** Leases up to `limit` events; waits up to `waitMs` for one when none is pending. */
  async poll(options: { limit?: number; waitMs?: number } = {}, signal?: AbortSignal): Promise<AgentEvent[]> {
    const query = { limit: options.limit ?? 10, waitMs: options.waitMs ?? 0 };
    const page = await this.sdk.unwrap(this.sdk.api.GET('/api/agents/runtime/events', { params: { query }, signal }));
    return page.items;
  }

  /** Acknowledges an event; acking one again is fine (204). */
  ack(eventId: string): Promise<void> {
    return this.sdk.ack(eventId);
  }

  async installations(): Promise<unknown> {
    return this.sdk.unwrap(this.sdk.api.GET('/api/agents/runtime/installations'));
  }
}
