import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createDatabase, migrateToLatest } from '../../src/db/database';
import { trailDays } from '../../src/trail/repositories/days';
import { archiveFile, utcDay } from '../../src/trail/maintenance';
import { holdGrantTree, releaseGrantTree } from '../../src/trail/holds';
import { exportTrailDay } from '../../src/trail/export';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { ManualClock } from '../support/clock';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';

/**
 * Retention drops whole days, after exporting them, and keeps held trees' records; time moves by
 * the service's clock. On a database of its own (`<run's database>_retention`): dropping days of
 * the run's shared database would take other test files' records with them.
 */
const DAY = 86_400_000;
const database = ownDatabase('retention');
const archiveDir = mkdtempSync(path.join(tmpdir(), 'trail-archive-'));
// Noon UTC of today: moving whole days keeps every record well inside its day.
const clock = new ManualClock(Date.parse(`${utcDay(Date.now())}T12:00:00Z`));
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  await database.fresh();
  const db = createDatabase(database.url, 1);
  await migrateToLatest(db);
  await db.destroy();
  service = await startService(
    { DATABASE_URL: database.url, CALL_RECORD_RETENTION_DAYS: '2', CALL_RECORD_ARCHIVE_DIR: archiveDir },
    { clock },
  );
  world = await brokerWorld(service);
});
afterAll(async () => {
  await service?.close();
  await database.drop();
});

async function served(grantId: string) {
  const items: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: { items: Array<Record<string, unknown>>; nextCursor: string | null } } = await service.http
      .get(`/api/grants/${grantId}/calls`)
      .query({ limit: 2, ...(cursor ? { cursor } : {}) })
      .set(world.owner.auth);
    expect(res.status).toBe(200);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
  } while (cursor);
  return items;
}

const archived = (file: string) =>
  gunzipSync(readFileSync(file))
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('the call trail past retention', () => {
  it('exports a day, then drops it whole; a held tree keeps its records until released', async () => {
    const held = await chainOf(service, world, 1, { budget: { calls: 100, windowMs: 60_000 } });
    const other = await chainOf(service, world, 0, { budget: { calls: 100, windowMs: 60_000 } });
    const firstDay = utcDay(clock.now());
    for (const grantId of [held.leafId, held.rootId, other.rootId, other.rootId]) {
      expect((await checkAs(service, world, grantId, world.agent)).status).toBe(200);
      clock.advance(1000);
    }
    // A denied call is recorded too, with its reason and no outcome.
    expect((await checkAs(service, world, other.rootId, world.agent, { tool: 'pulls.merge' })).body).toMatchObject({ decision: 'deny' });
    const servedBefore = [...(await served(held.leafId)), ...(await served(held.rootId)), ...(await served(other.rootId))];
    expect(servedBefore).toHaveLength(5);
    expect(await holdGrantTree(service.deps.db, clock, held.leafId)).toEqual({ rootGrantId: held.rootId });

    // The next day: nothing is past retention yet; the days ahead are made.
    clock.advance(DAY);
    const nextRun = await service.deps.trailMaintenance.runNow();
    expect(nextRun.dropped).toEqual([]);
    expect((await trailDays(service.deps.db)).days.map((d) => d.day)).toContain(utcDay(clock.now() + 3 * DAY));
    expect((await checkAs(service, world, other.rootId, world.agent)).status).toBe(200);

    // Three days on, the first day is older than the 2 days kept: exported, then dropped.
    clock.advance(2 * DAY);
    const run = await service.deps.trailMaintenance.runNow();
    expect(run.dropped).toEqual([firstDay]);
    expect((await trailDays(service.deps.db)).days.map((d) => d.day)).not.toContain(firstDay);
    const file = archiveFile(archiveDir, firstDay);
    const digest = createHash('sha256').update(readFileSync(file)).digest('hex');
    expect(readFileSync(`${file}.sha256`, 'utf8')).toBe(`${digest}  ${path.basename(file)}\n`);
    const byId = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.id).localeCompare(String(b.id));
    expect(archived(file).sort(byId)).toEqual(servedBefore.sort(byId));
    for (const record of archived(file)) expect(Object.keys(record)).not.toContain('args');

    // The unheld tree's first day is gone (its next day's record stays); the held tree's is kept.
    expect((await served(other.rootId)).map((r) => r.requestedAt)).toEqual([expect.stringContaining(utcDay(clock.now() - 2 * DAY))]);
    expect(await served(held.leafId)).toEqual(servedBefore.filter((r) => r.grantId === held.leafId));
    expect(await served(held.rootId)).toEqual(servedBefore.filter((r) => r.grantId === held.rootId));

    // Released: the copies go, and the trail of the held tree is what retention left.
    expect(await releaseGrantTree(service.deps.db, held.rootId)).toEqual({ rootGrantId: held.rootId, releasedRecords: 2 });
    expect(await served(held.leafId)).toEqual([]);
    expect(await holdGrantTree(service.deps.db, clock, 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab')).toBeUndefined();
  });

  it('keeps a day whose export fails, and says so in the metrics', async () => {
    const { rootId } = await chainOf(service, world, 0, { budget: { calls: 100, windowMs: 60_000 } });
    expect((await checkAs(service, world, rootId, world.agent)).status).toBe(200);
    const day = utcDay(clock.now());
    // The archive of that day cannot be written: its name is taken by a directory.
    const blocked = archiveFile(archiveDir, day);
    await mkdir(`${blocked}.partial`, { recursive: true });
    clock.advance(3 * DAY);
    const run = await service.deps.trailMaintenance.runNow();
    expect(run.kept).toEqual([day]);
    expect(run.dropped).not.toContain(day);
    expect((await trailDays(service.deps.db)).days.map((d) => d.day)).toContain(day);
    expect(await served(rootId)).toHaveLength(1);
    const metrics = await service.http.get('/metrics');
    expect(metrics.text).toMatch(/^call_record_export_failures_total [1-9]/m);
    expect(metrics.text).toMatch(/^call_record_partitions \d+/m);
    expect(metrics.text).toMatch(new RegExp(`^call_record_oldest_day_timestamp_seconds ${Date.parse(`${day}T00:00:00Z`) / 1000}$`, 'm'));
  });

  it('exports a day by command as the API presents it: the same file for the same day', async () => {
    const day = utcDay(clock.now());
    const out = path.join(archiveDir, 'by-hand.jsonl.gz');
    const { rootId } = await chainOf(service, world, 0);
    expect((await checkAs(service, world, rootId, world.agent)).status).toBe(200);
    // The service signs a checkpoint within TRAIL_CHECKPOINT_MS of new leaves; wait for one over them.
    let first = await exportTrailDay(service.deps.db, day, out);
    for (let tries = 0; first.checkpoint === null && tries < 50; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      first = await exportTrailDay(service.deps.db, day, out);
    }
    const again = await exportTrailDay(service.deps.db, day, out);
    expect(again).toEqual(first);
    // The covering checkpoint beside the file: its size is above every leaf the day's records hold.
    const leaves = gunzipSync(readFileSync(out))
      .toString()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { leafIndex: number });
    expect(leaves.length).toBeGreaterThan(0);
    const note = readFileSync(`${out}.checkpoint`, 'utf8');
    expect(Number(note.split('\n')[1])).toBe(first.checkpoint);
    expect(first.checkpoint).toBeGreaterThan(Math.max(...leaves.map((record) => record.leafIndex)));
    await expect(exportTrailDay(service.deps.db, '2026-13-45', out)).rejects.toThrow('not a day');
    await expect(exportTrailDay(service.deps.db, '../../etc', out)).rejects.toThrow('not a day');
  });

  it('refuses a cursor naming anything but a call (400), as any cursor it did not issue', async () => {
    const { rootId } = await chainOf(service, world, 0);
    for (const id of [rootId, 'call_..', 'call_01jd6x3c4vf8r9t2y5u7w0z1a\u0000']) {
      const cursor = Buffer.from(JSON.stringify([new Date(clock.now()).toISOString(), id])).toString('base64url');
      const res = await service.http.get(`/api/grants/${rootId}/calls`).query({ cursor }).set(world.owner.auth);
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: 'invalid_request' });
    }
  });

  it('records a check of a day with no partition yet, and moves it into the day once made', async () => {
    const { rootId } = await chainOf(service, world, 0, { budget: { calls: 100, windowMs: 60_000 } });
    clock.advance(10 * DAY); // past the days made ahead
    const day = utcDay(clock.now());
    expect((await trailDays(service.deps.db)).days.map((d) => d.day)).not.toContain(day);
    const res = await checkAs(service, world, rootId, world.agent);
    expect(res.status).toBe(200);
    expect((await served(rootId)).map((r) => r.id)).toEqual([res.body.callId]);
    const run = await service.deps.trailMaintenance.runNow();
    expect(run.created).toContain(day);
    expect((await served(rootId)).map((r) => r.id)).toEqual([res.body.callId]);
    // Its outcome finds it in its day, by its id alone.
    const outcome = await service.http
      .post(`/api/broker/calls/${res.body.callId}/outcome`)
      .set(world.broker.auth)
      .send({ outcome: 'succeeded', durationMs: 5 });
    expect(outcome.body).toMatchObject({ id: res.body.callId, outcome: 'succeeded', durationMs: 5 });
  });
});
