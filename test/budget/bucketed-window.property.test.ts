import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { treeVersionKey } from '../../src/budget/keys';
import { SlidingWindowBudget } from '../../src/budget/sliding-window';

/**
 * The bucketed window (large budgets) against an exact model, on the real script in the real
 * Redis, at times the test chooses (`atMs`). Two properties, for any sequence of calls:
 *
 * 1. Safety: it never admits more than the exact window would. After every admitted call, the
 *    admitted calls within any window's length up to it number at most `calls`.
 * 2. Exact up to one bucket: a call it refuses would also be refused by an exact window one bucket
 *    longer, that is, `calls` admitted calls lie within (t - window - bucket, t].
 *
 * Small shapes (exact up to 3 calls, 10 buckets a window) keep each sequence short. Windows last
 * minutes of the test's time because Redis expires a window's key on its own clock (window +
 * bucket after its last write): a window of 50 ms could lapse in real time between two calls of a
 * slow run, and the model, which knows only the test's time, would see calls forgotten.
 */
const prefix = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}bucketed:`;
let redis: Redis;
let budget: SlidingWindowBudget;

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0', { keyPrefix: prefix });
  budget = new SlidingWindowBudget(redis, { exactMaxCalls: 3, buckets: 10 });
});
afterAll(() => redis.disconnect());

const within = (times: number[], from: number, to: number) => times.filter((t) => t > from && t <= to).length;

describe('a bucketed window against the exact model', () => {
  it('never admits more than the exact window, and refuses only what an exact window one bucket longer would', async () => {
    // A run that never reached its budget checks the first half only: count the runs that did.
    const runs = Number(process.env.FUZZ_RUNS ?? 100);
    let refusing = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 4, max: 12 }),
        fc.integer({ min: 50_000, max: 1_000_000 }),
        // Gaps in hundredths of the window, mostly short so that budgets are reached and refusals
        // checked, sometimes long so that calls leave the window.
        fc.array(
          fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 10 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 120 }) }),
          {
            minLength: 1,
            maxLength: 60,
          },
        ),
        async (calls, windowMs, gaps) => {
          fc.pre(gaps.length > calls);
          let refused = false;
          const rootId = `grt_${randomUUID()}`;
          await redis.set(treeVersionKey(rootId), 'v');
          const level = { grantId: 'g', calls, windowMs };
          const bucketMs = budget.bucketMsOf(level);
          expect(bucketMs).toBeGreaterThan(0);
          const admitted: number[] = [];
          let at = 1_800_000_000_000;
          for (const gap of gaps) {
            at += Math.floor((gap * windowMs) / 100);
            const answer = await budget.run({ rootId, levels: [level], expectedVersion: 'v', mode: 'consume', atMs: at });
            if (answer.kind === 'allowed') {
              admitted.push(at);
              expect(within(admitted, at - windowMs, at)).toBeLessThanOrEqual(calls);
            } else {
              expect(answer.kind).toBe('exhausted');
              refused = true;
              expect(within(admitted, at - windowMs - bucketMs, at)).toBeGreaterThanOrEqual(calls);
            }
          }
          if (refused) refusing += 1;
        },
      ),
      { numRuns: runs, seed: Number(process.env.FUZZ_SEED ?? 20261122) },
    );
    if (process.env.FUZZ_STATS) console.log('refusing', refusing);
    expect(refusing).toBeGreaterThanOrEqual(Math.ceil(runs / 4));
  });

  it('holds at most windowMs / bucketMs + 1 buckets whatever the budget', async () => {
    const rootId = `grt_${randomUUID()}`;
    await redis.set(treeVersionKey(rootId), 'v');
    const level = { grantId: 'g', calls: 1_000_000, windowMs: 1000 };
    let at = 1_800_000_000_000;
    for (let i = 0; i < 3000; i += 1) {
      at += 1;
      await budget.run({ rootId, levels: [level], expectedVersion: 'v', mode: 'consume', atMs: at });
    }
    // Bucket fields, plus the total `n` and the oldest bucket `h`.
    expect(await redis.hlen(`{${rootId}}:win:g`)).toBeLessThanOrEqual(10 + 1 + 2);
  });
});
