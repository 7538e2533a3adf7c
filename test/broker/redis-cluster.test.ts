import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Cluster } from 'ioredis';
import { promisify } from 'node:util';
import { treeVersionKey } from '../../src/budget/keys';
import { SlidingWindowBudget } from '../../src/budget/sliding-window';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster';
import { startService, type TestService } from '../support/service';
import { countWrites } from '../support/socket-writes';
import { attenuateGrant } from '../support/world';
import { callRecordsOf } from '../support/call-records';

/**
 * The service on a real Redis Cluster (REDIS_CLUSTER_NODES, CONTRACT §12): three masters this
 * suite starts and kills. Two replicas share it. Budgets stay exact under concurrency across the
 * chain, a change on one replica holds on the other's next check, trees spread over the nodes, and
 * a node that dies fails checks closed; back empty, it gets its windows rebuilt from the trail.
 */
let cluster: RedisCluster;
let a: TestService;
let b: TestService;
let world: BrokerWorld;
const prefix = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}cluster:`;

beforeAll(async () => {
  cluster = await startRedisCluster();
  // A generous command timeout: these tests count allows under bursts of hundreds of checks on a
  // busy CI machine running three more redis-servers; the 250 ms default is tested elsewhere.
  const env = { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_KEY_PREFIX: prefix, REDIS_COMMAND_TIMEOUT_MS: '2000' };
  a = await startService(env);
  b = await startService(env);
  world = await brokerWorld(a);
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await cluster?.stop();
});

const allowed = (answers: Array<{ body: { decision: string } }>) => answers.filter((r) => r.body.decision === 'allow').length;
const versionKey = (rootId: string) => `${prefix}{${rootId}}:ver`;

it('spreads grant trees over the nodes, each tree on one slot', async () => {
  const roots: string[] = [];
  for (let i = 0; i < 8; i += 1) {
    const { rootId, leafId } = await chainOf(a, world, 1);
    expect((await checkAs(a, world, leafId, world.agent)).body.decision).toBe('allow');
    roots.push(rootId);
  }
  const owners = await Promise.all(roots.map((rootId) => cluster.portOf(versionKey(rootId))));
  expect(new Set(owners).size).toBeGreaterThan(1);
  // The version key really is on the node that owns its slot.
  const exists = await promisify(execFile)('redis-cli', ['-p', String(owners[0]), 'EXISTS', versionKey(roots[0]!)]);
  expect(exists.stdout.trim()).toBe('1');
});

describe('exact budgets on the cluster', () => {
  it('allows exactly 30 of 300 concurrent checks through two replicas', async () => {
    const { leafId } = await chainOf(a, world, 2, { budget: { calls: 30, windowMs: 3_600_000 } });
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => checkAs(i % 2 ? a : b, world, leafId, world.agent)));
    expect(answers.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body.code}`)).toEqual([]);
    expect(allowed(answers)).toBe(30);
    const records = (await callRecordsOf(a.deps.db, leafId)).filter((r) => r.outcome !== 'denied');
    expect(records).toHaveLength(30);
  });

  it('charges the parent too: two children of a parent with 5 calls allow 5 between them', async () => {
    const { rootId } = await chainOf(a, world, 0, { budget: { calls: 5, windowMs: 3_600_000 } });
    const left = await attenuateGrant(a, world.agent, rootId);
    const right = await attenuateGrant(a, world.agent, rootId);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => checkAs(i % 2 ? a : b, world, i % 4 < 2 ? left.id : right.id, world.agent)),
    );
    expect(allowed(answers)).toBe(5);
    expect((await checkAs(b, world, rootId, world.agent)).body.reason).toBe('budget_exhausted');
  });

  it('counts a bucketed window (above 1 000 calls) exactly as well', async () => {
    const { rootId } = await chainOf(a, world, 0, { budget: { calls: 1001, windowMs: 3_600_000 } });
    const answers = await Promise.all(Array.from({ length: 1010 }, (_, i) => checkAs(i % 2 ? a : b, world, rootId, world.agent)));
    expect(allowed(answers)).toBe(1001);
  });
});

describe('the budget scripts sent together', () => {
  it('leave in one write to the node that owns the tree, and each gets its own answer', async () => {
    const redis = a.deps.redis as Cluster;
    const budget = new SlidingWindowBudget(redis);
    const rootId = `grt_${randomUUID()}`;
    await redis.set(treeVersionKey(rootId), 'v1');
    // The set above has connected the node that owns the tree; the others may not be yet.
    const ready = redis.nodes('master').filter((node) => node.status === 'ready');
    const levels = [{ grantId: 'grt_turn', calls: 15, windowMs: 60_000 }];
    const { result: answers, ...counted } = await countWrites(
      ready.map((node) => node.stream),
      () => Promise.all(Array.from({ length: 20 }, () => budget.run({ rootId, levels, expectedVersion: 'v1', mode: 'consume' }))),
    );
    expect(answers.filter((answer) => answer.kind === 'allowed')).toHaveLength(15);
    expect(answers.filter((answer) => answer.kind === 'exhausted')).toHaveLength(5);
    expect(counted).toEqual({ write: 0, writev: 1 });
  });
});

describe('a change on one replica holds on the next check on the other', () => {
  it('revocation and a stopped runtime', async () => {
    const { rootId, leafId } = await chainOf(a, world, 2);
    expect((await checkAs(a, world, leafId, world.agent)).body.decision).toBe('allow');
    await b.http.post(`/api/grants/${rootId}/revoke`).set(world.owner.auth).expect(200);
    expect((await checkAs(a, world, leafId, world.agent)).body.reason).toBe('revoked');

    const other = await chainOf(a, world, 1);
    expect((await checkAs(b, world, other.leafId, world.agent)).body.decision).toBe('allow');
    await a.http.post(`/api/registry/pods/${world.podId}/agents/bot/runtime-stop`).set(world.owner.auth).expect(200);
    expect((await checkAs(b, world, other.leafId, world.agent)).body.reason).toBe('runtime_stopped');
    await a.http.post(`/api/registry/pods/${world.podId}/agents/bot/runtime-start`).set(world.owner.auth).expect(200);
    expect((await checkAs(b, world, other.leafId, world.agent)).body.decision).toBe('allow');
  });
});

describe('when a node dies', () => {
  it('fails closed, then rebuilds the lost windows from the call trail when the node is back', async () => {
    const { leafId, rootId } = await chainOf(a, world, 1, { budget: { calls: 3, windowMs: 3_600_000 } });
    expect(allowed(await Promise.all(Array.from({ length: 5 }, () => checkAs(a, world, leafId, world.agent))))).toBe(3);
    const node = await cluster.portOf(versionKey(rootId));

    await cluster.kill(node);
    const during = await Promise.all(Array.from({ length: 10 }, (_, i) => checkAs(i % 2 ? a : b, world, leafId, world.agent)));
    for (const answer of during) expect(answer.body).toMatchObject({ code: 'dependency_unavailable' });
    expect(during.every((answer) => answer.status === 503)).toBe(true);

    await cluster.restart(node);
    // Back, but empty: the tree's windows are rebuilt from the trail, so the used-up budget stays
    // used up on both replicas, and a fresh tree on that node works again.
    // Each replica's cluster client reconnects to the node on its own schedule; until it has, its
    // checks stay 503 (closed), so each is asked until it answers.
    const onceReconnected = async (replica: TestService) => {
      let answer = await checkAs(replica, world, leafId, world.agent);
      for (let i = 0; i < 100 && answer.status === 503; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await checkAs(replica, world, leafId, world.agent);
      }
      return answer;
    };
    expect((await onceReconnected(a)).body).toMatchObject({ decision: 'deny', reason: 'budget_exhausted' });
    expect((await onceReconnected(b)).body).toMatchObject({ decision: 'deny', reason: 'budget_exhausted' });
    const records = (await callRecordsOf(a.deps.db, leafId)).filter((r) => r.outcome !== 'denied');
    expect(records).toHaveLength(3);
  });
});
