import { LruCache } from '../kernel/lru';

/**
 * Speed-up: a read kept per replica for a short while, by key (a broker's route map for Envoy's
 * external authorization, src/protocols/ext-authz/). Without it, every ext_authz check reads its
 * broker's map from Postgres, a round trip the plain broker check does not make.
 *
 * Trades: a change made on another replica reaches this one within `freshMs`; a change made on
 * this one at once (`forget`). Fit only for configuration that never decides a call on its own:
 * a route map only names the tool a request is, and the check still decides that call on the
 * grant's current facts. Memory: at most `max` entries.
 */
export function freshFor<T>(read: (key: string) => Promise<T>, options: { freshMs: number; max: number; now: () => number }) {
  const kept = new LruCache<string, { value: Promise<T>; at: number }>(options.max);
  return {
    read(key: string): Promise<T> {
      const now = options.now();
      const entry = kept.get(key);
      if (entry && now - entry.at < options.freshMs) return entry.value;
      const value = read(key);
      kept.set(key, { value, at: now });
      // A failed read is not kept: the next request reads again.
      value.catch(() => kept.delete(key));
      return value;
    },
    forget(key: string): void {
      kept.delete(key);
    },
  };
}
