import type { Redis } from 'ioredis';
import knex, { type Knex } from 'knex';
import { ensureDatabaseExists } from '../../src/db/database';
import { knexConfig } from '../../src/db/knex-config';
import { startService, type TestService } from '../support/service';
import { startOwnRedis, type OwnRedis } from '../support/own-redis';
import { ownDatabase } from '../support/own-database';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecordsOf } from '../support/call-records';

let own: OwnRedis;
const database = ownDatabase('broker_failures');
let service: TestService;
let world: BrokerWorld;

// This suite's service uses a redis-server of its own, so stopping Redis stops nobody else's.
beforeAll(async () => {
  own = await startOwnRedis();
  await database.migrated();
  // The production Redis command timeout (the run's default is longer): one test is about it.
  service = await startService({ REDIS_URL: own.url, DATABASE_URL: database.url, REDIS_COMMAND_TIMEOUT_MS: '250' });
  world = await brokerWorld(service);
});
afterAll(async () => {
  await service.close();
  await own.stop();
  await database.drop();
});

async function redisReady(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (service.deps.redis.status !== 'ready') {
    if (Date.now() > deadline) throw new Error('redis did not reconnect');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('broker check when Redis fails', () => {
  it('answers 503 while Redis is down, allows nothing, records nothing; then recovers', async () => {
    const { leafId } = await chainOf(service, world, 1, { budget: { calls: 3, windowMs: 3_600_000 } });
    expect((await checkAs(service, world, leafId, world.agent)).body.decision).toBe('allow');

    await own.stop();
    const during = await Promise.all(Array.from({ length: 10 }, () => checkAs(service, world, leafId, world.agent)));
    for (const res of during) {
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('dependency_unavailable');
    }
    expect(await callRecordsOf(service.deps.db, leafId)).toHaveLength(1);

    await own.start();
    await redisReady();
    // The restart lost every window (no persistence): they are rebuilt from the call trail, so the
    // one call allowed before the restart still counts and two units are left, not three.
    const after = await Promise.all(Array.from({ length: 5 }, () => checkAs(service, world, leafId, world.agent)));
    expect(after.filter((r) => r.body.decision === 'allow')).toHaveLength(2);
  });

  it('keeps a used-up budget used up across a Redis restart, exact and bucketed windows alike', async () => {
    await redisReady();
    const exact = await chainOf(service, world, 1, { budget: { calls: 20, windowMs: 3_600_000 } });
    // Above 1 000 calls a window counts per bucket: rebuilt per bucket too.
    const bucketed = await chainOf(service, world, 0, { budget: { calls: 1500, windowMs: 3_600_000 } });
    const spend = (grantId: string, n: number) =>
      Promise.all(Array.from({ length: n }, () => checkAs(service, world, grantId, world.agent)));
    const allowed = (answers: Array<{ body: { decision: string } }>) => answers.filter((r) => r.body.decision === 'allow').length;
    expect(allowed(await spend(exact.leafId, 25))).toBe(20);
    expect(allowed(await spend(bucketed.rootId, 40))).toBe(40);

    await own.stop();
    await own.start();
    await redisReady();

    expect(allowed(await spend(exact.leafId, 5))).toBe(0);
    // The root of the exact chain took those 20 units too: its own window was rebuilt as well.
    expect(allowed(await spend(exact.rootId, 5))).toBe(0);
    const after = await checkAs(service, world, bucketed.rootId, world.agent);
    expect(after.body).toMatchObject({ decision: 'allow', budget: { remaining: 1500 - 41 } });
  });

  it('survives SCRIPT FLUSH mid-run', async () => {
    await redisReady();
    const { rootId } = await chainOf(service, world, 0, { budget: { calls: 30, windowMs: 3_600_000 } });
    const first = await Promise.all(Array.from({ length: 10 }, () => checkAs(service, world, rootId, world.agent)));
    await service.deps.redis.script('FLUSH');
    const second = await Promise.all(Array.from({ length: 10 }, () => checkAs(service, world, rootId, world.agent)));
    expect([...first, ...second].map((r) => r.body.decision)).toEqual(Array(20).fill('allow'));
    expect(second.at(-1)!.body.budget.remaining).toBeLessThanOrEqual(10);
  });

  it('answers 503 when Redis is slower than REDIS_COMMAND_TIMEOUT_MS', async () => {
    await redisReady();
    const { rootId } = await chainOf(service, world, 0);
    expect((await checkAs(service, world, rootId, world.agent)).body.decision).toBe('allow');
    // CLIENT PAUSE holds every other client's commands for longer than the 250 ms timeout.
    const pauser = (service.deps.redis as Redis).duplicate();
    try {
      await pauser.connect();
      await pauser.call('CLIENT', 'PAUSE', '600', 'ALL');
      const res = await checkAs(service, world, rootId, world.agent);
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('dependency_unavailable');
    } finally {
      pauser.disconnect();
    }
    await new Promise((r) => setTimeout(r, 650));
    expect((await checkAs(service, world, rootId, world.agent)).body.decision).toBe('allow');
  });
});

/**
 * Postgres failing under the call record. A service of its own runs on a throwaway database
 * (`<this run's database>_cut`) that the test closes to connections and whose sessions it ends,
 * as a Postgres restart would, without touching the run's shared database.
 */
describe('broker check when Postgres fails under the call record', () => {
  const runUrl = new URL(process.env.DATABASE_URL!);
  const cutUrl = new URL(runUrl);
  cutUrl.pathname = `${runUrl.pathname}_cut`;
  const cutName = decodeURIComponent(cutUrl.pathname.slice(1));
  let admin: Knex;
  let pg: TestService;
  let local: BrokerWorld;

  const adminUrl = new URL(runUrl);
  adminUrl.pathname = '/postgres';
  const dropCutDatabase = () => admin.raw('drop database if exists ?? with (force)', [cutName]);

  beforeAll(async () => {
    admin = knex({ client: 'pg', connection: adminUrl.toString(), pool: { min: 0, max: 1 } });
    await dropCutDatabase();
    await ensureDatabaseExists(cutUrl.toString());
    const migrator = knex(knexConfig(cutUrl.toString(), 1));
    try {
      await migrator.migrate.latest();
    } finally {
      await migrator.destroy();
    }
    pg = await startService({ DATABASE_URL: cutUrl.toString() });
    local = await brokerWorld(pg);
  });
  afterAll(async () => {
    await admin.raw('alter database ?? with allow_connections true', [cutName]).catch(() => undefined);
    await pg?.close();
    await dropCutDatabase();
    await admin.destroy();
  });

  /** Postgres down for this service: no new session is accepted, and every open one is ended. */
  async function cutPostgres(): Promise<void> {
    await admin.raw('alter database ?? with allow_connections false', [cutName]);
    await admin.raw('select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and pid <> pg_backend_pid()', [cutName]);
  }

  const remaining = (res: { body: { budget?: { remaining: number } } }) => res.body.budget?.remaining;

  it('answers 503 when the call record cannot be written, allows nothing, and gives the unit back', async () => {
    const { leafId } = await chainOf(pg, local, 1, { budget: { calls: 3, windowMs: 3_600_000 } });
    // Warm: chain, tree facts, subject and broker token are all cached, so the only Postgres
    // work left in the next check is the call record's INSERT, after the unit is taken.
    const warm = await checkAs(pg, local, leafId, local.agent);
    expect({ decision: warm.body.decision, remaining: remaining(warm) }).toEqual({ decision: 'allow', remaining: 2 });

    await cutPostgres();
    try {
      const during = await checkAs(pg, local, leafId, local.agent);
      expect({ status: during.status, code: during.body.code, decision: during.body.decision }).toEqual({
        status: 503,
        code: 'dependency_unavailable',
        decision: undefined,
      });
      // Said in the service's log, one line each without the driver's stack (not on stdout). Which
      // words the driver has depends on a race: Postgres's FATAL read before the socket closes, or not.
      const problems = pg.logs.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'database connection problem');
      expect(problems.map((entry) => entry.err.message)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/is not currently accepting connections|terminating connection|Connection ended unexpectedly/),
        ]),
      );
      for (const entry of problems) expect(entry.err.message).not.toMatch(/\n|\bat \S+ \(/);
    } finally {
      await admin.raw('alter database ?? with allow_connections true', [cutName]);
    }

    // The unit taken for the unrecorded call came back: 2 were left before, 1 after this allow.
    const after = await checkAs(pg, local, leafId, local.agent);
    expect({ decision: after.body.decision, remaining: remaining(after) }).toEqual({ decision: 'allow', remaining: 1 });
    // Every consumed unit has its record, and the refused call has none.
    expect(await countRecords(leafId)).toEqual(['pending', 'pending']);
  });

  it('does the same when Postgres refuses the record itself (the table is gone)', async () => {
    const { rootId } = await chainOf(pg, local, 0, { budget: { calls: 2, windowMs: 3_600_000 } });
    expect(remaining(await checkAs(pg, local, rootId, local.agent))).toBe(1);
    const cut = knex(knexConfig(cutUrl.toString(), 1));
    try {
      await cut.raw('alter table call_records rename to call_records_away');
      try {
        const during = await checkAs(pg, local, rootId, local.agent);
        expect({ status: during.status, code: during.body.code }).toEqual({ status: 503, code: 'dependency_unavailable' });
      } finally {
        await cut.raw('alter table call_records_away rename to call_records');
      }
    } finally {
      await cut.destroy();
    }
    const after = await checkAs(pg, local, rootId, local.agent);
    expect({ decision: after.body.decision, remaining: remaining(after) }).toEqual({ decision: 'allow', remaining: 0 });
    expect(await countRecords(rootId)).toEqual(['pending', 'pending']);
  });

  async function countRecords(grantId: string): Promise<string[]> {
    const rows = await callRecordsOf(pg.deps.db, grantId);
    return rows.reverse().map((row) => row.outcome);
  }
});
