import { RuntimeApiError, type AgentEvent, type RuntimeClient } from './client';
import type { ResultStore, StoredResult } from './store';

export type Handler = (event: AgentEvent) => unknown | Promise<unknown>;

export interface Processed {
  event: AgentEvent;
  record: StoredResult;
  /** False when the result was already persisted: a redelivery after a crash before the ack. */
  fresh: boolean;
}

/**
 * The work loop of spec §6 for one event: handle, persist the result, acknowledge. The result is
 * keyed by event id, so a redelivered event whose result is already persisted (the agent crashed
 * between persist and ack, or the ack was lost) is only acknowledged, never handled twice.
 */
export async function processEvent(
  event: AgentEvent,
  store: ResultStore,
  handle: Handler,
  ack: (id: string) => Promise<void>,
): Promise<Processed> {
  let record = await store.get(event.id);
  const fresh = record === undefined;
  if (!record) {
    record = { eventId: event.id, type: event.type, handledAt: new Date().toISOString(), result: await handle(event) };
    await store.put(record);
  }
  await ack(event.id);
  return { event, record, fresh };
}

export interface LoopOptions {
  limit?: number;
  waitMs?: number;
  signal?: AbortSignal;
  onProcessed?: (processed: Processed) => void;
  onError?: (error: unknown, event?: AgentEvent) => void;
}

/**
 * One poll and its events, in order. An event that fails is left unacknowledged: its lease runs
 * out and the service delivers it again. Returns how many events were processed.
 */
export async function runOnce(client: RuntimeClient, store: ResultStore, handle: Handler, options: LoopOptions = {}): Promise<number> {
  const events = await client.poll({ limit: options.limit ?? 10, waitMs: options.waitMs ?? 0 }, options.signal);
  let processed = 0;
  for (const event of events) {
    try {
      // Not `onProcessed?.(await processEvent(…))`: optional chaining would skip the work itself
      // whenever no callback is given.
      const result = await processEvent(event, store, handle, (id) => client.ack(id));
      options.onProcessed?.(result);
      processed += 1;
    } catch (error) {
      options.onError?.(error, event);
    }
  }
  return processed;
}

const MAX_BACKOFF_MS = 30_000;

/**
 * Polls until the signal aborts. Network trouble and 5xx answers back off (1 s doubling to 30 s);
 * a rejected credential (401/403) ends the loop, since no retry can fix it.
 */
export async function runForever(client: RuntimeClient, store: ResultStore, handle: Handler, options: LoopOptions = {}): Promise<void> {
  let backoffMs = 0;
  while (!options.signal?.aborted) {
    try {
      await runOnce(client, store, handle, { waitMs: 20_000, ...options });
      backoffMs = 0;
    } catch (error) {
      if (options.signal?.aborted) return;
      if (error instanceof RuntimeApiError && error.credentialRejected) throw error;
      options.onError?.(error);
      backoffMs = Math.min(Math.max(backoffMs * 2, 1000), MAX_BACKOFF_MS);
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
    }
  }
}
