/**
 * Speed-up: concurrent calls with the same key share one run.
 *
 * Trades: a caller may get an answer a run started a moment before it asked (every caller still
 * gets one that was true when it was made: a tree's version after its rebuild) for one run
 * instead of one per caller, as when every check of a tree whose Redis keys are gone would read
 * the call trail to rebuild them.
 *
 * Off (SPEEDUPS=off): every caller runs it.
 */
export function singleFlight<K, V>(run: (key: K) => Promise<V>): (key: K) => Promise<V> {
  const inFlight = new Map<K, Promise<V>>();
  return (key) => {
    let running = inFlight.get(key);
    if (!running) {
      running = run(key).finally(() => inFlight.delete(key));
      inFlight.set(key, running);
    }
    return running;
  };
}
