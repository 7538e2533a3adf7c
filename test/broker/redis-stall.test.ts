import { Redis } from 'ioredis';
import { connectRedis, type RedisClient } from '../../src/redis/client';
import { createLogger } from '../../src/kernel/log';

/**
 * The Redis command timeout against this process's own stalls: a command whose answer came in
 * time but was not read yet, because the event loop was busy past the timeout, is not failed;
 * one that Redis really has not answered still is, and the connection stays usable after.
 */
const TIMEOUT_MS = 100;
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const keyPrefix = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}redis-stall:`;
let redis: RedisClient;

beforeAll(async () => {
  redis = connectRedis({ url, keyPrefix, commandTimeoutMs: TIMEOUT_MS }, createLogger('silent'));
  await redis.connect();
});
afterAll(() => redis.disconnect());

/** Keeps the event loop busy, as a long GC or a starved CPU would. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe('Redis command timeout', () => {
  it('fails, with ioredis alone, a command answered in time while this process stalled', async () => {
    // The fault the service's client is built against: without it, this test has nothing to show.
    const plain = new Redis(url, { keyPrefix, commandTimeout: TIMEOUT_MS, lazyConnect: true });
    try {
      await plain.connect();
      await plain.ping();
      const sent = plain.set('plain', 'v');
      stall(3 * TIMEOUT_MS);
      await expect(sent).rejects.toThrow('Command timed out');
    } finally {
      plain.disconnect();
    }
  });

  it('answers a command whose reply came in time while this process stalled', async () => {
    // Sent from a reply's callback (the poll phase), as the service sends: the loop then reaches its
    // timers before it reads the socket again.
    await redis.ping();
    const sent = redis.set('stalled', 'v');
    const queuedBehind = redis.get('stalled');
    stall(3 * TIMEOUT_MS);
    await expect(sent).resolves.toBe('OK');
    await expect(queuedBehind).resolves.toBe('v');
  });

  it('fails a command Redis has not answered, and the answers after it reach their commands', async () => {
    // BLPOP on an empty list holds this connection's answers (and only this connection's) for its own timeout.
    const held = redis.blpop('empty', (3 * TIMEOUT_MS) / 1000);
    const queuedBehind = redis.set('behind', 'v');
    await expect(held).rejects.toThrow('Command timed out');
    await expect(queuedBehind).rejects.toThrow('Command timed out');
    // The late answers (nil, OK) are read and dropped: the next command gets its own.
    await new Promise((r) => setTimeout(r, 3 * TIMEOUT_MS));
    await expect(redis.get('behind')).resolves.toBe('v');
    await expect(redis.ping()).resolves.toBe('PONG');
  });
});
