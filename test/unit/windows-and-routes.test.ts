import { DEFAULT_WINDOW_SHAPE, SlidingWindowBudget } from '../../src/budget/sliding-window';
import { LruCache } from '../../src/kernel/lru';
import { errorCodesOf } from '../../src/kernel/route';

describe('window shapes', () => {
  const budget = new SlidingWindowBudget({
    defineCommand: () => undefined,
    grantBudgetWindow: () => null,
    grantBudgetRestore: () => null,
  } as never);

  it('keeps exact windows up to the exact limit and buckets (100 a window) above it', () => {
    expect(budget.bucketMsOf({ calls: DEFAULT_WINDOW_SHAPE.exactMaxCalls, windowMs: 3_600_000 })).toBe(0);
    expect(budget.bucketMsOf({ calls: DEFAULT_WINDOW_SHAPE.exactMaxCalls + 1, windowMs: 3_600_000 })).toBe(36_000);
    expect(budget.bucketMsOf({ calls: 1_000_000, windowMs: 50 })).toBe(1);
  });
});

describe('a bounded LRU', () => {
  it('forgets the least recently used first', () => {
    const lru = new LruCache<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.get('a')).toBe(1);
    lru.set('c', 3);
    expect([lru.get('a'), lru.get('b'), lru.get('c')]).toEqual([1, undefined, 3]);
    expect(lru.size).toBe(2);
  });

  it('keeps what an insertion-ordered list of its keys would, through any run of sets, gets and deletes', () => {
    // The reference: the keys from least to most recently used, as the cache's contract says.
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (const capacity of [1, 3, 50]) {
      const lru = new LruCache<number, number>(capacity);
      let order: number[] = [];
      const values = new Map<number, number>();
      for (let step = 0; step < 20_000; step += 1) {
        const key = random(capacity * 3);
        const op = random(3);
        if (op === 0) {
          lru.set(key, step);
          order = [...order.filter((k) => k !== key), key];
          values.set(key, step);
          if (order.length > capacity) values.delete(order.shift()!);
        } else if (op === 1) {
          expect(lru.get(key)).toBe(values.get(key));
          if (values.has(key)) order = [...order.filter((k) => k !== key), key];
        } else {
          lru.delete(key);
          order = order.filter((k) => k !== key);
          values.delete(key);
        }
        expect(lru.size).toBe(order.length);
      }
      for (const key of order) expect(lru.get(key)).toBe(values.get(key));
    }
  });
});

describe('the problem codes a route can answer with', () => {
  it('adds credentials, not_found and body codes to what the route declares', () => {
    const codes = errorCodesOf({
      auth: { kinds: ['human'], authenticate: async () => null as never },
      path: '/api/x/:id',
      errors: ['last_owner'],
    });
    expect(codes).toEqual(
      expect.arrayContaining(['unauthenticated', 'credential_not_accepted', 'not_found', 'last_owner', 'invalid_request']),
    );
    expect(errorCodesOf({ auth: null, path: '/healthz' })).not.toContain('unauthenticated');
  });
});
