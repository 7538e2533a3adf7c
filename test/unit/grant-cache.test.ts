import type { Grant } from '@grant-broker/client';
import { GrantCache } from '../../gateway/src/grant-cache';

/** The gateway's per-grant listing cache: kept while checks see the version it was read under. */
const grant = (id: string, status: Grant['status'] = 'active') => ({ id, status }) as Grant;

function counted(cache: GrantCache, id: string, status?: Grant['status']) {
  let reads = 0;
  return {
    read: () =>
      cache.grant(id, async () => {
        reads += 1;
        return grant(id, status);
      }),
    reads: () => reads,
  };
}

it('reads once, is dropped when a check sees another version, and kept while checks see the same', async () => {
  const cache = new GrantCache();
  const g = counted(cache, 'grt_a');
  await g.read();
  await g.read();
  expect(g.reads()).toBe(1);
  // Read before any check: the first version seen may be newer than the read.
  cache.saw('grt_a', 'v1');
  await g.read();
  expect(g.reads()).toBe(2);
  cache.saw('grt_a', 'v1');
  await g.read();
  expect(g.reads()).toBe(2);
  cache.saw('grt_a', 'v2');
  await g.read();
  expect(g.reads()).toBe(3);
});

it('is dropped on a refused check, on a check with no version, and after its age', async () => {
  let now = 0;
  const cache = new GrantCache(1_000, 100, () => now);
  const g = counted(cache, 'grt_b');
  await g.read();
  cache.forget('grt_b');
  await g.read();
  cache.saw('grt_b', undefined);
  await g.read();
  expect(g.reads()).toBe(3);
  now += 1_000;
  await g.read();
  expect(g.reads()).toBe(4);
});

it('keeps no failed read, and holds at most its bound of grants', async () => {
  const cache = new GrantCache(60_000, 2);
  await expect(cache.grant('grt_c', () => Promise.reject(new Error('broker gone')))).rejects.toThrow('broker gone');
  const c = counted(cache, 'grt_c');
  await c.read();
  expect(c.reads()).toBe(1);
  for (const id of ['grt_d', 'grt_e', 'grt_f']) await counted(cache, id).read();
  // grt_c was the oldest of three past a bound of two: read again.
  await c.read();
  expect(c.reads()).toBe(2);
});
