import { singleFlight } from '../../src/speedups/single-flight';
import { createShapeMemo } from '../../src/speedups/memo';

/** The speed-ups that share work: one run for concurrent callers of a key, kept shape codes. */
describe('single-flight', () => {
  it('runs once for concurrent callers of one key, once per key, and again once a run is over', async () => {
    const runs: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const shared = singleFlight(async (key: string) => {
      runs.push(key);
      await gate;
      return `${key}@${runs.length}`;
    });
    const first = Promise.all([shared('a'), shared('a'), shared('b')]);
    release();
    expect(await first).toEqual(['a@2', 'a@2', 'b@2']);
    expect(await shared('a')).toBe('a@3');
    expect(runs).toEqual(['a', 'b', 'a']);
  });

  it('hands a failure to every caller of that run, and runs afresh after it', async () => {
    let calls = 0;
    const shared = singleFlight(async () => {
      calls += 1;
      if (calls === 1) throw new Error('redis away');
      return 'v2';
    });
    const failed = await Promise.allSettled([shared('t'), shared('t')]);
    expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(await shared('t')).toBe('v2');
    expect(calls).toBe(2);
  });
});

describe('the shape memo', () => {
  it('keeps the codes it is given, and starts over rather than grow past its bound', () => {
    const memo = createShapeMemo();
    memo.keep(new Map([['a', 1]]));
    expect(memo.get('a')).toBe(1);
    expect(memo.get('b')).toBeUndefined();
    memo.keep(new Map(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i] as [string, number])));
    expect(memo.get('a')).toBeUndefined();
    expect(memo.get('k49999')).toBe(49_999);
  });
});
