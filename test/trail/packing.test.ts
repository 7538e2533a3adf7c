import { createDatabase, migrateToLatest } from '../../src/db/database';
import { dayIndexes, packTrailDay } from '../../src/trail/repositories/packing';
import { dayTable } from '../../src/trail/repositories/days';
import { utcDay } from '../../src/trail/maintenance';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { ManualClock } from '../support/clock';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';

/**
 * Once a day is over, the maintenance job rebuilds its B-tree packed (the day's entries arrived
 * interleaved across grants, and its pages settled part full). Time moves by the service's clock.
 * On a database of its own (`<run's database>_packing`): it rebuilds the indexes of whole days.
 */
const DAY = 86_400_000;
const database = ownDatabase('packing');
const clock = new ManualClock(Date.parse(`${utcDay(Date.now())}T12:00:00Z`));
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  await database.fresh();
  const db = createDatabase(database.url, 1);
  await migrateToLatest(db);
  await db.destroy();
  service = await startService({ DATABASE_URL: database.url, CALL_RECORD_RETENTION_DAYS: '30' }, { clock });
  world = await brokerWorld(service);
});
afterAll(async () => {
  await service?.close();
  await database.drop();
});

/** `count` records of the day before noon, interleaved across 500 grants as a busy trail's are. */
async function busyDay(count: number): Promise<void> {
  const [shape] = (
    await service.deps.db.raw(
      `insert into call_record_shapes (tool, principal_kind, principal_id) values ('repos.read_file', 1, 'agt_packing')
     on conflict (tool, principal_kind, principal_id) do update set tool = excluded.tool returning code`,
    )
  ).rows as Array<{ code: number }>;
  await service.deps.db.raw(
    `insert into call_records (requested_at, shape, outcome, id, grant_id, decision_id, args_digest)
     select to_timestamp(?::double precision / 1000) - (n * interval '1 second'), ?, 2, gen_random_uuid(),
            ('00000000-0000-7000-8000-' || lpad(to_hex(n % 500), 12, '0'))::uuid, gen_random_uuid(), sha256(n::text::bytea)
       from generate_series(1, ?) as n`,
    [clock.now(), shape!.code, count],
  );
}

async function served(grantId: string) {
  const res = await service.http.get(`/api/grants/${grantId}/calls`).query({ limit: 100 }).set(world.owner.auth);
  expect(res.status).toBe(200);
  return res.body.items as Array<Record<string, unknown>>;
}

const indexOf = async (day: string) => (await dayIndexes(service.deps.db)).find((d) => d.day === day)!;

describe("a closed day's trail index", () => {
  it('is rebuilt packed once the day is over, and serves the same records', async () => {
    const day = utcDay(clock.now());
    const grant = await chainOf(service, world, 1, { budget: { calls: 100, windowMs: 60_000 } });
    for (let i = 0; i < 5; i += 1) expect((await checkAs(service, world, grant.leafId, world.agent)).status).toBe(200);
    await busyDay(20_000);
    const before = await served(grant.leafId);
    expect(before).toHaveLength(5);

    // Today is still open: nothing is packed.
    expect((await service.deps.trailMaintenance.runNow()).packed).toEqual([]);
    const open = await indexOf(day);
    expect(open.packed).toBe(false);

    clock.advance(DAY);
    const run = await service.deps.trailMaintenance.runNow();
    expect(run.packed).toEqual([day]);
    const packed = await indexOf(day);
    expect(packed.packed).toBe(true);
    // Interleaved entries leave pages about 70 % full; packed, the same entries take about 70 % of the bytes.
    expect(packed.bytes).toBeLessThan(open.bytes * 0.8);
    expect(await served(grant.leafId)).toEqual(before);
    // A packed day is not rebuilt again.
    expect((await service.deps.trailMaintenance.runNow()).packed).toEqual([]);
    expect((await service.http.get('/metrics')).text).toMatch(/^call_record_days_packed_total [1-9]/m);
  });

  it('rebuilds a day again when a rebuild was cut off, dropping the invalid copy it left', async () => {
    const day = utcDay(clock.now());
    await busyDay(2_000);
    clock.advance(DAY);
    expect((await service.deps.trailMaintenance.runNow()).packed).toEqual([day]);
    // What a rebuild cut off by a crash leaves: an invalid copy named as REINDEX CONCURRENTLY names it.
    const { index } = await indexOf(day);
    await expect(
      service.deps.db.raw(`create index concurrently ?? on ?? ((1 / (outcome - outcome)))`, [`${index}_ccnew`, dayTable(day)]),
    ).rejects.toThrow(/division by zero/);
    expect((await indexOf(day)).packed).toBe(false);

    expect((await service.deps.trailMaintenance.runNow()).packed).toEqual([day]);
    expect((await indexOf(day)).packed).toBe(true);
    const { rows } = await service.deps.db.raw(`select count(*)::int as n from pg_index where indrelid = ?::regclass and not indisvalid`, [
      dayTable(day),
    ]);
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('gives up a rebuild when the service stops, cancelling it in Postgres, and packs the day later', async () => {
    const day = utcDay(clock.now());
    await busyDay(2_000);
    clock.advance(DAY);
    const db = service.deps.db;
    // A writer still open on the day: the rebuild waits for it, as it would for a late report.
    const writer = await db.transaction();
    await writer.raw(`update ?? set duration_ms = 1 where ctid = (select min(ctid) from ??)`, [dayTable(day), dayTable(day)]);
    const stop = new AbortController();
    const packing = packTrailDay(db, day, stop.signal);
    for (let waited = 0; ; waited += 50) {
      const { rows } = await db.raw(
        `select 1 from pg_stat_activity where query ilike 'reindex index concurrently%' and wait_event_type = 'Lock'`,
      );
      if (rows.length > 0) break;
      if (waited > 10_000) throw new Error('the rebuild never started waiting');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const asked = Date.now();
    stop.abort();
    await expect(packing).rejects.toThrow(/cancel/i);
    expect(Date.now() - asked).toBeLessThan(5_000);
    await writer.rollback();
    expect((await indexOf(day)).packed).toBe(false);

    expect((await service.deps.trailMaintenance.runNow()).packed).toEqual([day]);
    expect((await indexOf(day)).packed).toBe(true);
  });
});
