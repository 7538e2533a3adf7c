/**
 * How a proof finds the records of a 256-leaf block: first among the checks made around the time
 * the signed checkpoints say its leaves were appended (so Postgres reads one or two day partitions),
 * then, when a record is not there (checked long before its leaf), among every day: the proof is the
 * same either way. And what keeps that lookup from reading every page of today: each signature
 * brings today's BRIN summaries up to date and analyzes a day grown by a tenth.
 */
import { createDatabase, migrateToLatest, type Database } from '../../src/db/database';
import { callRecordsOfLeaves } from '../../src/trail/repositories/leaf-records';
import { dayTable, keepLeafLookupCurrent } from '../../src/trail/repositories/days';
import { checkTimesOf } from '../../src/trail/tree-store';
import { leafHash, openCheckpoint, recordLeaf, verifyInclusion } from '../../clients/grantctl/src/trail-proofs';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';

jest.setTimeout(120_000);
const database = ownDatabase('trail_leaf_lookup');
const DAY = 86_400_000;

let db: Database;
let service: TestService;
let world: BrokerWorld;
let records: Array<{ id: string; leafIndex: number; outcomeLeafIndex: number | null; requestedAt: string }>;

async function checkpoint() {
  const key = (await service.http.get('/api/trail/key').expect(200)).text.trim();
  return openCheckpoint((await service.http.get('/api/trail/checkpoint').expect(200)).text, key);
}

beforeAll(async () => {
  await database.fresh();
  db = createDatabase(database.url, 2);
  await migrateToLatest(db);
  service = await startService({ DATABASE_URL: database.url, TRAIL_CHECKPOINT_MS: '100' });
  world = await brokerWorld(service);
  const grantId = (await chainOf(service, world, 0, { tools: ['repos.read_file'] })).rootId;
  // Enough changes to today's partition (a check and its outcome each) to pass the analyze threshold of 50.
  for (let i = 0; i < 30; i += 1) {
    const res = await checkAs(service, world, grantId, world.agent).expect(200);
    await service.http
      .post(`/api/broker/calls/${res.body.callId}/outcome`)
      .set(world.broker.auth)
      .send({ outcome: 'succeeded' })
      .expect(200);
  }
  const size = Number((await db('trail_tree').first('size')).size);
  for (let i = 0; i < 200 && (await checkpoint()).size < size; i += 1) await new Promise((r) => setTimeout(r, 50));
  records = (await service.http.get(`/api/grants/${grantId}/calls?limit=6`).set(world.owner.auth).expect(200)).body.items;
  expect(records).toHaveLength(6);
});

afterAll(async () => {
  await service?.close();
  await db?.destroy();
  await database.drop();
});

describe('the records of a block', () => {
  it('are looked for among the checks made around their append, and found there', async () => {
    const leaves = records.flatMap((r) => [r.leafIndex, r.outcomeLeafIndex!]).sort((a, b) => a - b);
    const ranges = [[leaves[0]!, leaves.at(-1)! + 1] as const];
    const within = await checkTimesOf(db, ranges);
    expect(within?.to).toBeInstanceOf(Date);
    const covers = (at: number) => (!within!.from || within!.from.getTime() <= at) && (!within!.to || at < within!.to.getTime());
    expect(records.filter((r) => !covers(Date.parse(r.requestedAt)))).toEqual([]);
    expect(await callRecordsOfLeaves(db, ranges, within)).toHaveLength(6);
    // A span that misses them finds none: the span narrows the search, it does not widen it.
    const before = { from: new Date(Date.now() - 3 * DAY), to: new Date(Date.now() - 2 * DAY) };
    expect(await callRecordsOfLeaves(db, ranges, before)).toHaveLength(0);
  });

  it('checked long before the checkpoints around their leaves are still found, and the proof is the same', async () => {
    const record = records[2]!;
    const proof = async () =>
      (await service.http.get(`/api/trail/proofs/inclusion?callId=${record.id}`).set(world.owner.auth).expect(200)).body;
    const first = await proof();
    // The checkpoints now say the leaves were appended days after these checks: the first look misses them.
    await db.raw(`update trail_checkpoints set signed_at = signed_at + interval '3 days'`);
    try {
      const leaves = [record.leafIndex, record.leafIndex + 1] as const;
      expect(await callRecordsOfLeaves(db, [leaves], await checkTimesOf(db, [leaves]))).toHaveLength(0);
      const second = await proof();
      expect(second).toEqual(first);
      const signed = await checkpoint();
      const leaf = leafHash(recordLeaf(record));
      const hashes = second.hashes.map((hash: string) => Buffer.from(hash, 'base64'));
      expect(verifyInclusion(record.leafIndex, signed.size, leaf, hashes, signed.root)).toBe(true);
    } finally {
      await db.raw(`update trail_checkpoints set signed_at = signed_at - interval '3 days'`);
    }
  });
});

describe('keeping the lookup current', () => {
  it("summarizes today's new pages in its BRIN indexes and analyzes the day once it has grown", async () => {
    const today = dayTable(new Date().toISOString().slice(0, 10));
    const analyzedAt = async () =>
      (
        await db.raw<{ rows: Array<{ at: Date | null }> }>(
          `select coalesce(last_analyze, last_autoanalyze) as at from pg_stat_user_tables where relid = ?::regclass`,
          [today],
        )
      ).rows[0]?.at ?? null;
    // Postgres counts a day's changes a moment after they commit: asked again until it has.
    for (let i = 0; i < 40 && !(await analyzedAt()); i += 1) {
      await keepLeafLookupCurrent(db);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(await analyzedAt()).toBeInstanceOf(Date);
    const { rows } = await db.raw<{ rows: Array<{ left: number }> }>(
      `select sum(brin_summarize_new_values(x.indexrelid))::int as left from pg_index x
         join pg_class i on i.oid = x.indexrelid join pg_am a on a.oid = i.relam and a.amname = 'brin' where x.indrelid = ?::regclass`,
      [today],
    );
    expect(rows[0]!.left).toBe(0);
  });
});
