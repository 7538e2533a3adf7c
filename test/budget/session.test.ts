import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { treeLabelsKey, treeVersionKey } from '../../src/budget/keys';
import { SlidingWindowBudget, type BudgetLevel } from '../../src/budget/sliding-window';

/**
 * The tree's session in the budget script: labels with their first-seen time, their stamp, their
 * life and their cap; the calls per tool in the root's window; all in the script's one round trip.
 */
const prefix = `test:session:${randomUUID()}:`;
let redis: Redis;
const TTL = 10_000;
const budget = () => new SlidingWindowBudget(redis, undefined, { labelTtlMs: TTL, maxLabels: 3, callBuckets: 10 });

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0', { keyPrefix: prefix, maxRetriesPerRequest: 1 });
  await redis.ping();
});
afterAll(() => redis.disconnect());

const levels: BudgetLevel[] = [
  { grantId: 'grt_leaf', calls: 100, windowMs: 60_000 },
  { grantId: 'grt_root', calls: 100, windowMs: 60_000 },
];

async function tree() {
  const rootId = `grt_${randomUUID()}`;
  await redis.set(treeVersionKey(rootId), 'v');
  const b = budget();
  const run = (atMs: number, stamp: string, tool: string, labels: string[] = [], mode: 'consume' | 'probe' = 'consume') =>
    b.run({ rootId, levels, expectedVersion: 'v', mode, atMs, session: { stamp, tool, labels } });
  return { rootId, b, run };
}

describe('a tree session', () => {
  it('keeps a label with the time first seen, moves the stamp, and refuses a decision made on the old one', async () => {
    const { run } = await tree();
    const first = await run(1_000, '0', 'repos.read_file', ['private_data']);
    expect(first).toMatchObject({ kind: 'allowed', session: { labels: { private_data: 1_000 }, calls: { 'repos.read_file': 1 } } });
    const stamp = first.kind === 'allowed' ? first.session.stamp : '';
    expect(stamp).not.toBe('0');
    // A decision made on the labels before: nothing taken, the labels as they are now.
    const stale = await run(1_500, '0', 'repos.push');
    expect(stale).toMatchObject({ kind: 'session', session: { stamp, labels: { private_data: 1_000 } } });
    // The same label again keeps its first time and its stamp.
    const again = await run(2_000, stamp, 'repos.read_file', ['private_data']);
    expect(again).toMatchObject({ kind: 'allowed', session: { stamp, labels: { private_data: 1_000 }, calls: { 'repos.read_file': 2 } } });
  });

  it('labels only what is charged: a probe or a full window keeps nothing', async () => {
    const { run } = await tree();
    expect(await run(1_000, '0', 'repos.read_file', ['private_data'], 'probe')).toMatchObject({
      kind: 'probed',
      session: { labels: {}, calls: {} },
    });
  });

  it('lets a label go SESSION_LABEL_TTL_MS after it was first seen, with a new stamp', async () => {
    const { run } = await tree();
    const first = await run(1_000, '0', 't', ['private_data']);
    const stamp = first.kind === 'allowed' ? first.session.stamp : '';
    expect(await run(1_000 + TTL - 1, stamp, 't')).toMatchObject({ kind: 'allowed', session: { labels: { private_data: 1_000 } } });
    const gone = await run(1_000 + TTL, stamp, 't');
    expect(gone).toMatchObject({ kind: 'session', session: { labels: {} } });
    expect(gone.kind === 'session' && gone.session.stamp).not.toBe(stamp);
  });

  it('refuses a call that would take the tree past its labels cap, taking nothing', async () => {
    const { run, rootId } = await tree();
    const held = await run(1_000, '0', 't', ['a', 'b', 'c']);
    const stamp = held.kind === 'allowed' ? held.session.stamp : '';
    const refused = await run(1_100, stamp, 't', ['d']);
    expect(refused).toMatchObject({ kind: 'label_limit', session: { labels: { a: 1_000, b: 1_000, c: 1_000 }, calls: { t: 1 } } });
    expect(await redis.hexists(treeLabelsKey(rootId), 'd')).toBe(0);
    // A label it holds already is no new one.
    expect(await run(1_200, stamp, 't', ['a'])).toMatchObject({ kind: 'allowed', session: { calls: { t: 2 } } });
  });

  it('counts calls per tool over the root window, by buckets that leave whole', async () => {
    const { run } = await tree();
    await run(0, '0', 'repos.delete_branch');
    await run(10_000, '0', 'repos.delete_branch');
    await run(10_000, '0', 'repos.push');
    // Buckets of 6 s: the call at 0 counts until its bucket's end leaves the 60 s window.
    expect(await run(65_999, '0', 'x', [], 'probe')).toMatchObject({ session: { calls: { 'repos.delete_branch': 2, 'repos.push': 1 } } });
    expect(await run(66_000, '0', 'x', [], 'probe')).toMatchObject({ session: { calls: { 'repos.delete_branch': 1, 'repos.push': 1 } } });
  });

  it('reads the version and the session in one round trip', async () => {
    const { run, rootId, b } = await tree();
    await run(1_000, '0', 'repos.read_file', ['private_data']);
    expect(await b.treeState(rootId)).toMatchObject({
      version: 'v',
      session: { labels: { private_data: 1_000 }, calls: { 'repos.read_file': 1 } },
    });
    expect(await b.treeState(`grt_${randomUUID()}`)).toBeNull();
  });
});
