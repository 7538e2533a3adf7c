import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { connectRedis, type RedisClient, type RedisSettings } from '../../src/redis/client';
import { createLogger } from '../../src/kernel/log';
import { redisCork } from '../../src/speedups/redis-cork';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster';

/**
 * The Redis command timeout against this process's own stalls: a command whose answer came in
 * time but was not read yet, because the event loop was busy past the timeout, is not failed;
 * one that Redis really has not answered still is, and the connection stays usable after.
 */
const TIMEOUT_MS = 100;
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const keyPrefix = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}redis-stall:`;
let cluster: RedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  await cluster.stop();
});

/**
 * Keeps the event loop busy, as a long GC or a starved CPU would: for `ms`, and then until
 * `answered` says Redis has written its answers (on a loaded machine Redis itself may wait for a
 * core longer than the stall, and an answer that has not come must time out).
 */
function stall(ms: number, answered: () => boolean = () => true): void {
  const until = performance.now() + ms;
  while (performance.now() < until || !answered()) {
    // busy
  }
}

/**
 * Whether Redis has applied `key` = `value`, asked synchronously by redis-cli over a connection of
 * its own. Redis writes a connection's answers before it answers a command it read later, so once
 * it says so, the answers to what this process sent before that SET are in this process's socket.
 */
function applied(server: { url: string; clusterNodes?: readonly string[] }, key: string, value: string): () => boolean {
  const target = server.clusterNodes ? ['-c', '-u', `redis://${server.clusterNodes[0]}`] : ['-u', server.url];
  return () => execFileSync('redis-cli', [...target, 'GET', `${keyPrefix}${key}`], { encoding: 'utf8' }).trim() === value;
}

it('fails, with ioredis alone, a command answered in time while this process stalled', async () => {
  // The fault the service's client is built against: without it, the tests below show nothing.
  const plain = new Redis(url, { keyPrefix, commandTimeout: TIMEOUT_MS, lazyConnect: true });
  try {
    await plain.connect();
    await plain.ping();
    await plain.set('plain-last', 'unset');
    const sent = Promise.allSettled([plain.set('plain', 'v'), plain.set('plain-last', 'set')]);
    stall(3 * TIMEOUT_MS, applied({ url }, 'plain-last', 'set'));
    // Both answers were in the socket, unread, when ioredis's timers ran.
    expect((await sent).map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message))).toEqual([
      'Command timed out',
      'Command timed out',
    ]);
  } finally {
    plain.disconnect();
  }
});

const servers: Array<[string, () => Omit<RedisSettings, 'keyPrefix' | 'commandTimeoutMs'>]> = [
  ['one server', () => ({ url })],
  ['a Redis Cluster', () => ({ url, clusterNodes: cluster.nodes.split(',') })],
];

describe.each(servers)('Redis command timeout on %s', (_name, server) => {
  let redis: RedisClient;
  beforeAll(async () => {
    redis = connectRedis({ ...server(), keyPrefix, commandTimeoutMs: TIMEOUT_MS }, createLogger('silent'));
    await redis.connect();
  });
  afterAll(() => redis.disconnect());

  it('answers a command whose reply came in time while this process stalled', async () => {
    // Sent from a reply's callback (the poll phase), as the service sends: the loop then reaches its
    // timers before it reads the socket again.
    await redis.set('{t}last', 'unset');
    const answers = Promise.allSettled([redis.set('{t}stalled', 'v'), redis.get('{t}stalled'), redis.set('{t}last', 'set')]);
    stall(3 * TIMEOUT_MS, applied(server(), '{t}last', 'set'));
    expect((await answers).map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message))).toEqual(['OK', 'v', 'OK']);
  });

  it('answers a command sent into a corked socket just before this process stalled', async () => {
    // The service's speed-up holds a check's script in the socket to the end of the turn when
    // answers are awaited (src/speedups/redis-cork.ts): a stall in that turn delays the write, and
    // Redis cannot answer what it has not been sent. Its deadline starts when the turn ends.
    const corked = connectRedis({ ...server(), keyPrefix, commandTimeoutMs: 2 * TIMEOUT_MS }, createLogger('silent'), redisCork);
    try {
      await corked.connect();
      await corked.set('{t}corked', '0');
      const answers: string[] = [];
      for (let i = 1; i <= 4; i += 1) {
        const awaited = corked.get('{t}corked');
        corked.beforeSend?.();
        const sent = corked.set('{t}corked', String(i));
        stall(3 * 2 * TIMEOUT_MS);
        for (const a of await Promise.allSettled([awaited, sent]))
          answers.push(a.status === 'fulfilled' ? String(a.value) : (a.reason as Error).message);
      }
      expect(answers).toEqual(['0', 'OK', '1', 'OK', '2', 'OK', '3', 'OK']);
    } finally {
      corked.disconnect();
    }
  });

  it('fails a command Redis has not answered, and the answers after it reach their commands', async () => {
    // BLPOP on an empty list holds this connection's answers (and only this connection's) for its
    // own timeout; the hash tag puts both keys on one node.
    const held = redis.blpop('{t}empty', (3 * TIMEOUT_MS) / 1000);
    const queuedBehind = redis.set('{t}behind', 'v');
    await expect(held).rejects.toThrow('Command timed out');
    await expect(queuedBehind).rejects.toThrow('Command timed out');
    // The late answers (nil, OK) are read and dropped: the next command gets its own.
    await new Promise((r) => setTimeout(r, 3 * TIMEOUT_MS));
    await expect(redis.get('{t}behind')).resolves.toBe('v');
    await expect(redis.set('{t}after', 'w')).resolves.toBe('OK');
    await expect(redis.get('{t}after')).resolves.toBe('w');
  });
});
