import { useEffect, useRef } from 'react';
import type { Api } from '../session';

/** How long one long poll of the inbox waits at most (the API takes up to 25000). */
const WAIT_MS = 25_000;
/** After a failed poll, wait this long, doubling up to the cap, before asking again. */
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;
/** An answer faster than this that brought nothing (the replica was full) waits before the next ask. */
const QUICK_EMPTY_MS = 1000;

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = window.setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (window.clearTimeout(timer), resolve()), { once: true });
  });

/**
 * Keeps the pending approvals live: long-polls `GET /api/approvals?waitMs` for one requested
 * after `newest` (the newest the page shows; none shown: any pending one), and calls `changed`
 * when the poll ends (a new approval, or the wait ran out: decisions taken elsewhere show up then
 * too). Backs off on errors; stops when the page unmounts.
 */
export function useInboxWatch(api: Api, newest: string | undefined, changed: () => void) {
  const latest = useRef({ newest, changed });
  latest.current = { newest, changed };
  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    void (async () => {
      let backoff = FIRST_BACKOFF_MS;
      while (!signal.aborted) {
        const started = Date.now();
        const requestedAfter = latest.current.newest;
        try {
          const page = await api.unwrap(
            api.api.GET('/api/approvals', {
              params: { query: { state: 'pending', limit: 1, waitMs: WAIT_MS, ...(requestedAfter ? { requestedAfter } : {}) } },
              signal,
            }),
          );
          if (signal.aborted) return;
          backoff = FIRST_BACKOFF_MS;
          latest.current.changed();
          if (page.items.length === 0 && Date.now() - started < QUICK_EMPTY_MS) await pause(QUICK_EMPTY_MS, signal);
        } catch {
          if (signal.aborted) return;
          await pause(backoff, signal);
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        }
      }
    })();
    return () => controller.abort();
  }, [api]);
}
