import { useCallback, useEffect, useRef, useState } from 'react';

export type Load<T> = { state: 'loading' } | { state: 'failed'; error: unknown } | { state: 'ready'; data: T };

/**
 * Runs `load` now and whenever `keys` change, or on `reload()`; with `refreshMs`, again every so
 * often while the page is visible, keeping what is shown until the new answer is in (so a list
 * updates in place, and a failed refresh leaves the last good list up).
 */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[], refreshMs?: number) {
  const [result, setResult] = useState<Load<T>>({ state: 'loading' });
  const latest = useRef(load);
  latest.current = load;
  const generation = useRef(0);

  const run = useCallback((quiet: boolean) => {
    const mine = ++generation.current;
    if (!quiet) setResult({ state: 'loading' });
    latest.current().then(
      (data) => mine === generation.current && setResult({ state: 'ready', data }),
      (error: unknown) => mine === generation.current && !quiet && setResult({ state: 'failed', error }),
    );
  }, []);

  useEffect(() => run(false), keys);
  useEffect(() => {
    if (!refreshMs) return undefined;
    const tick = () => {
      if (document.visibilityState === 'visible') run(true);
    };
    const timer = window.setInterval(tick, refreshMs);
    document.addEventListener('visibilitychange', tick);
    return () => {
      window.clearInterval(timer);
      document.removeEventListener('visibilitychange', tick);
    };
  }, [refreshMs, run]);

  return { result, reload: () => run(false), refresh: () => run(true) };
}
