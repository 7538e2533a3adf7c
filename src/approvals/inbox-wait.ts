import type { Wakeup } from '../events/waker';
import { inboxWaiting } from './metrics';

/** The events waker as the inbox's long poll uses it (src/events/waker.ts). */
export interface InboxWaker {
  ensureListening(maxWaitMs?: number): Promise<void>;
  subscribe(key: string): Wakeup;
}

/** The waker's key an approval requested on a pod wakes (notified at commit by its request). */
export const approvalsWakeKey = (podId: string) => `approvals:${podId}`;

/** Long polls of the inbox waiting at once on one replica; past it, a poll answers at once. */
export const MAX_INBOX_WAITERS = 500;
/** Pods one wait listens to; a caller deciding for more finds the rest by the timed re-check. */
const MAX_KEYS_PER_WAIT = 100;
/** A notification is only a hint: a wait re-checks at least this often. */
const RECHECK_MS = 5000;
const LISTEN_START_WAIT_MS = 1000;

let waiting = 0;

/**
 * Repeats `look` until it finds something, `waitMs` passes or the client goes away, waking early
 * when an approval is requested on one of `podIds` on any replica (Postgres NOTIFY at commit).
 * Subscribes before each look, so an approval committed between the look and the wait is not
 * missed. Past MAX_INBOX_WAITERS waiting polls on this replica it looks once and answers.
 */
export async function waitForInbox<T extends { items: unknown[] }>(
  waker: InboxWaker,
  podIds: readonly string[],
  waitMs: number,
  signal: AbortSignal | undefined,
  look: () => Promise<T>,
): Promise<T> {
  if (waitMs === 0 || waiting >= MAX_INBOX_WAITERS) return look();
  waiting += 1;
  inboxWaiting.set(waiting);
  // A wait is timed on the wall clock: it is no fact about the world.
  const deadline = Date.now() + waitMs;
  let wakeups: Wakeup[] = [];
  const cancel = () => wakeups.forEach((wakeup) => wakeup.cancel());
  signal?.addEventListener('abort', cancel);
  try {
    await waker.ensureListening(LISTEN_START_WAIT_MS);
    for (;;) {
      wakeups = podIds.slice(0, MAX_KEYS_PER_WAIT).map((podId) => waker.subscribe(approvalsWakeKey(podId)));
      const found = await look();
      const remaining = deadline - Date.now();
      if (found.items.length > 0 || remaining <= 0 || signal?.aborted) return found;
      const ms = Math.min(remaining, RECHECK_MS);
      await (wakeups.length > 0 ? Promise.race(wakeups.map((wakeup) => wakeup.wait(ms))) : sleep(ms, signal));
      cancel();
    }
  } finally {
    cancel();
    signal?.removeEventListener('abort', cancel);
    waiting -= 1;
    inboxWaiting.set(waiting);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
