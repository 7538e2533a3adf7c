import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { SlidingWindowBudget, type BudgetLevel, type BudgetRequest } from '../../src/budget/sliding-window';
import { withBeforeSend } from '../../src/redis/client';
import { redisCork } from '../../src/speedups/redis-cork';
import { treeVersionKey } from '../../src/budget/keys';
import { DependencyUnavailableError } from '../../src/kernel/dependency';
import { startOwnRedis } from '../support/own-redis';
import { countWrites } from '../support/socket-writes';

const prefix = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}budget:`;
let redis: Redis;
let budget: SlidingWindowBudget;

// The timeout is generous: these tests are about counting, and 500 scripts at once on a loaded CI
// machine may queue past the service's 250 ms (its timeout is tested through the service). The
// budget's writes are batched as the service batches them (its speed-up, src/speedups/redis-cork.ts).
function client(url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0') {
  const connection = new Redis(url, { keyPrefix: prefix, commandTimeout: 2000, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  return withBeforeSend(connection, redisCork);
}

async function ready(c: Redis): Promise<Redis> {
  if (c.status !== 'ready') await new Promise((resolve) => c.once('ready', resolve));
  return c;
}

beforeAll(async () => {
  redis = await ready(client());
  budget = new SlidingWindowBudget(redis);
});
afterAll(() => redis.disconnect());

/** A tree with a known version, and a way to spend from any chain of it. */
async function tree(r = redis, b = budget) {
  const rootId = `grt_${randomUUID()}`;
  const version = randomUUID();
  await r.set(treeVersionKey(rootId), version);
  const spend = (levels: BudgetLevel[], mode: BudgetRequest['mode'] = 'consume', atMs?: number) =>
    b.run({ rootId, levels, expectedVersion: version, mode, atMs });
  return { rootId, version, spend };
}

const level = (grantId: string, calls: number, windowMs = 60_000): BudgetLevel => ({ grantId, calls, windowMs });

describe('sliding-window budget script', () => {
  it('allows exactly the budget under 500 concurrent calls', async () => {
    const { spend } = await tree();
    const answers = await Promise.all(Array.from({ length: 500 }, () => spend([level('grt_a', 50)])));
    expect(answers.filter((a) => a.kind === 'allowed')).toHaveLength(50);
    expect(answers.filter((a) => a.kind === 'exhausted')).toHaveLength(450);
  });

  it('charges every ancestor: two children of a parent with 5 calls get 5 in total', async () => {
    const { spend } = await tree();
    const parent = level('grt_parent', 5);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => spend([level(i % 2 ? 'grt_left' : 'grt_right', 5), parent])));
    expect(answers.filter((a) => a.kind === 'allowed')).toHaveLength(5);
  });

  it('consumes nothing when denied, and reports the least remaining over the chain', async () => {
    const { spend } = await tree();
    const chain = [level('grt_child', 10), level('grt_root', 3)];
    expect(await spend(chain)).toMatchObject({ kind: 'allowed', remaining: 2 });
    expect(await spend(chain, 'probe')).toMatchObject({ kind: 'probed', remaining: 2 });
    await spend(chain);
    await spend(chain);
    const denied = await spend(chain);
    expect(denied.kind).toBe('exhausted');
    // The child alone still has room: nothing was taken from it by the denied call.
    expect(await spend([level('grt_child', 10)], 'probe')).toMatchObject({ remaining: 7 });
  });

  it('slides: units come back as their calls leave the window, and retryAfterMs says when', async () => {
    // At times the test chooses (the script's clock override): Redis TIME is not a test's to move.
    const { spend } = await tree();
    const chain = [level('grt_w', 2, 400)];
    const t0 = 1_800_000_000_000;
    await spend(chain, 'consume', t0);
    await spend(chain, 'consume', t0 + 150);
    const denied = await spend(chain, 'consume', t0 + 150);
    expect(denied).toMatchObject({ kind: 'exhausted', retryAfterMs: 250 });
    expect((await spend(chain, 'consume', t0 + 399)).kind).toBe('exhausted');
    expect((await spend(chain, 'consume', t0 + 400)).kind).toBe('allowed'); // the first unit came back
    expect((await spend(chain, 'consume', t0 + 400)).kind).toBe('exhausted'); // the second has not yet
  });

  it('answers stale, consuming nothing, when the cached version is not current', async () => {
    const { rootId, version, spend } = await tree();
    await redis.set(treeVersionKey(rootId), 'someone-changed-it');
    const answer = await budget.run({ rootId, levels: [level('grt_s', 1)], expectedVersion: version, mode: 'consume' });
    expect(answer).toEqual({ kind: 'stale', version: 'someone-changed-it', session: { stamp: '0', labels: {}, calls: {} } });
    await redis.set(treeVersionKey(rootId), version);
    expect((await spend([level('grt_s', 1)])).kind).toBe('allowed');
  });

  it('answers missing, consuming nothing, when the version key is gone; a restore puts the windows back first', async () => {
    const rootId = `grt_${randomUUID()}`;
    const chain = [level('grt_m', 3)];
    expect(await budget.run({ rootId, levels: chain, expectedVersion: 'old', mode: 'consume' })).toEqual({ kind: 'missing' });
    const now = Date.now();
    const version = await budget.restore(
      rootId,
      [
        {
          ...chain[0]!,
          counted: [
            [now - 10, 1],
            [now - 5, 1],
          ],
        },
      ],
      'new-random',
    );
    expect(version).toBe('new-random');
    expect(await redis.get(treeVersionKey(rootId))).toBe('new-random');
    // Two calls came back from the trail: one unit is left.
    expect(await budget.run({ rootId, levels: chain, expectedVersion: version, mode: 'consume' })).toMatchObject({
      kind: 'allowed',
      remaining: 0,
    });
    // Another replica restoring later finds the version in place and changes nothing.
    expect(await budget.restore(rootId, [{ ...chain[0]!, counted: [] }], 'too-late')).toBe('new-random');
    expect(await budget.run({ rootId, levels: chain, expectedVersion: version, mode: 'probe' })).toMatchObject({ remaining: 0 });
  });

  it('keeps every key of a tree in one Redis Cluster slot (hash tag of the root id)', async () => {
    const { rootId, spend } = await tree();
    await spend([level('grt_x', 5), level(rootId, 5)]);
    const keys = await redis.keys(`${prefix}{${rootId}}*`);
    expect(keys.length).toBe(3);
    for (const key of keys) expect(key).toContain(`{${rootId}}:`);
  });
});

describe('the scripts sent together', () => {
  it('leave in one write, and each still gets its own answer', async () => {
    const { spend } = await tree();
    const { result: answers, ...counted } = await countWrites([redis.stream], () =>
      Promise.all(Array.from({ length: 20 }, () => spend([level('grt_turn', 15)]))),
    );
    expect(answers.filter((a) => a.kind === 'allowed')).toHaveLength(15);
    expect(answers.filter((a) => a.kind === 'exhausted')).toHaveLength(5);
    expect(counted).toEqual({ write: 0, writev: 1 });
  });

  it("leave as soon as the code that sent them has run, not after the turn's other callbacks", async () => {
    const { spend } = await tree();
    // A callback of the turn queued before the send: a cork held to the end of the turn would still be on.
    const corkedInNextCallback = new Promise<number>((resolve) => setImmediate(() => resolve(redis.stream.writableCorked)));
    const answer = spend([level('grt_now', 5)]);
    expect(redis.stream.writableCorked).toBe(1);
    expect(await corkedInNextCallback).toBe(0);
    expect(await answer).toMatchObject({ kind: 'allowed', remaining: 4 });
  });

  it("while a script awaits its answer, those of the turn's other callbacks leave together at the turn's end", async () => {
    const { spend } = await tree();
    const { result: answers, ...counted } = await countWrites([redis.stream], async () => {
      // Written (its microtask has run), not answered yet: Redis's answer is read in a later turn.
      const first = spend([level('grt_load', 5)]);
      await Promise.resolve();
      await Promise.resolve();
      // Two callbacks of one later turn, each sending its own script (two requests under load).
      const later = await new Promise<Array<Promise<unknown>>>((resolve) => {
        const sent: Array<Promise<unknown>> = [];
        setImmediate(() => sent.push(spend([level('grt_load', 5)])));
        setImmediate(() => {
          sent.push(spend([level('grt_load', 5)]));
          resolve(sent);
        });
      });
      return Promise.all([first, ...later]);
    });
    expect(answers.map((a) => (a as { remaining: number }).remaining).sort()).toEqual([2, 3, 4]);
    expect(counted).toEqual({ write: 1, writev: 1 });
  });
});

describe('budget script under Redis failures (a throwaway redis-server)', () => {
  it('survives SCRIPT FLUSH mid-run and a Redis restart; fails closed while Redis is down', async () => {
    const own = await startOwnRedis();
    const ownClient = await ready(client(own.url));
    try {
      const ownBudget = new SlidingWindowBudget(ownClient);
      const { spend } = await tree(ownClient, ownBudget);
      const chain = [level('grt_f', 100)];
      const first = await Promise.all(Array.from({ length: 20 }, () => spend(chain)));
      await ownClient.script('FLUSH');
      const second = await Promise.all(Array.from({ length: 20 }, () => spend(chain)));
      expect([...first, ...second].every((a) => a.kind === 'allowed')).toBe(true);
      expect(await spend(chain, 'probe')).toMatchObject({ remaining: 60 });

      await own.stop();
      await expect(spend(chain)).rejects.toBeInstanceOf(DependencyUnavailableError);

      await own.start();
      await waitUntil(() => ownClient.status === 'ready');
      // The restart lost the version (and the script cache): the first call asks for the windows
      // to be rebuilt instead of allowing on facts cached before the restart.
      const after = await spend(chain);
      expect(after.kind).toBe('missing');
    } finally {
      ownClient.disconnect();
      await own.stop();
    }
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
