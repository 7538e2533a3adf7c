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
  /** The service's EVENT_VISIBILITY_TIMEOUT_MS (default 30000): events whose lease ran out before their turn are left to come back. */
  leaseMs?: number;
  signal?: AbortSignal;
  onProcessed?: (processed: Processed) => void;
  onError?: (error: unknown, event?: AgentEvent) => void;
}

/**
 * Polls through the SDK's event iterator until nothing is pending (a poll finds no event), and
 * processes each event in order. An event that fails is left unacknowledged: its lease runs out
 * and the service delivers it again. Returns how many events were processed. A failed poll throws.
 */
export async function runOnce(client: RuntimeClient, store: ResultStore, handle: Handler, options: LoopOptions = {}): Promise<number> {
  return drive(client, store, handle, { waitMs: 0, ...options }, true);
}

async function drive(
  client: RuntimeClient,
  store: ResultStore,
  handle: Handler,
  options: LoopOptions,
  untilIdle: boolean,
): Promise<number> {
  const { limit, waitMs, leaseMs, signal } = options;
  let processed = 0;
  for await (const { event, ack } of client.events({ limit, waitMs, leaseMs, signal, untilIdle })) {
    try {
      // Not `onProcessed?.(await processEvent(…))`: optional chaining would skip the work itself
      // whenever no callback is given.
      const result = await processEvent(event, store, handle, ack);
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
 * Polls until the signal aborts (which also ends the long poll in flight). Network trouble and
 * 5xx answers back off (1 s doubling to 30 s); a rejected credential (401/403) ends the loop,
 * since no retry can fix it.
 */
export async function runForever(client: RuntimeClient, store: ResultStore, handle: Handler, options: LoopOptions = {}): Promise<void> {
  let backoffMs = 0;
  while (!options.signal?.aborted) {
    try {
      // The iterator runs until the signal aborts; it only returns early by throwing.
      await drive(client, store, handle, { waitMs: 20_000, ...options }, false);
      backoffMs = 0;
    } catch (error) {
      if (options.signal?.aborted) return;
      if (error instanceof RuntimeApiError && error.credentialRejected) throw error;
      options.onError?.(error);
      backoffMs = Math.min(Math.max(backoffMs * 2, 1000), MAX_BACKOFF_MS);
      await sleep(backoffMs, options.signal);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
