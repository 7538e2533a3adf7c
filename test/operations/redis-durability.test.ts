import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startOwnRedis, type OwnRedis } from '../support/own-redis';
import { startService, type TestService } from '../support/service';
import { ownDatabase } from '../support/own-database';

/**
 * /readyz says how Redis keeps the budget windows, read from the Redis itself (issue 8 §4): this
 * test's own redis-server, reconfigured at run time, so each answer is known in advance.
 */
let redis: OwnRedis;
const database = ownDatabase('redis_durability');
let service: TestService;
const cli = (...args: string[]) => promisify(execFile)('redis-cli', ['-p', String(redis.port), ...args]);

beforeAll(async () => {
  redis = await startOwnRedis();
  await database.migrated();
  service = await startService({ REDIS_URL: redis.url, DATABASE_URL: database.url });
});
afterAll(async () => {
  await service?.close();
  await redis?.stop();
  await database.drop();
});

const durability = async () => (await service.http.get('/readyz').expect(200)).body.redisDurability;

it('reports no persistence and no eviction for a Redis started with neither', async () => {
  expect(await durability()).toEqual({ persistence: 'none', evictionPolicy: 'noeviction' });
});

it('reports snapshots, then an append-only file, as Redis is reconfigured', async () => {
  await cli('CONFIG', 'SET', 'save', '3600 1');
  expect((await durability()).persistence).toBe('rdb');
  await cli('CONFIG', 'SET', 'appendonly', 'yes');
  expect((await durability()).persistence).toBe('aof');
});

it('reports an eviction policy that may drop budget windows', async () => {
  await cli('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
  expect((await durability()).evictionPolicy).toBe('allkeys-lru');
});
