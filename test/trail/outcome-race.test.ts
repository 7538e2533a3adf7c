/**
 * Outcomes of the same calls raced against each other, through HTTP on a database of this file's
 * own (so the tree grows only by this file's calls): in each round, the same batch sent several
 * times at once (one naming a call twice, one in reverse, one a part of it) with single reports of
 * two of its calls racing them. After each round every call is recorded once, and the tree grew by
 * exactly the round's outcomes, each leaf named by one record: no leaf is left that no record
 * rebuilds (an orphan leaf makes its block unprovable). At the end every outcome leaf, rebuilt from
 * its record as listed, is proven against a signed checkpoint's root.
 * OUTCOME_RACE_ROUNDS sets the rounds (a few by default; many, under CPU load, to hunt a race).
 */
import { createDatabase, migrateToLatest, type Database } from '../../src/db/database';
import { leafHash, openCheckpoint, outcomeLeaf, verifyInclusion } from '../../clients/grantctl/src/trail-proofs';
import { listedCallsOf, uuidOf } from '../support/call-records';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';

jest.setTimeout(600_000);
const database = ownDatabase('trail_outcome_race');
const ROUNDS = Number(process.env.OUTCOME_RACE_ROUNDS ?? 6);
const CALLS = 4;

let db: Database;
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  await database.fresh();
  db = createDatabase(database.url, 4);
  await migrateToLatest(db);
  service = await startService({ DATABASE_URL: database.url, TRAIL_CHECKPOINT_MS: '100' });
  world = await brokerWorld(service);
});

afterAll(async () => {
  await service?.close();
  await db?.destroy();
  await database.drop();
});

type Listed = { id: string; outcome: string; completedAt: string; leafIndex: number; outcomeLeafIndex: number | null };
type Answer = { callId: string; status: string };

const treeSize = async () => Number((await db('trail_tree').first('size')).size);

const batch = (outcomes: object[]) =>
  service.http
    .post('/api/broker/outcomes')
    .set(world.broker.auth)
    .send({ outcomes })
    .expect(200)
    .then((res) => res.body.results as Answer[]);

const single = (callId: string, outcome: string) =>
  service.http
    .post(`/api/broker/calls/${callId}/outcome`)
    .set(world.broker.auth)
    .send({ outcome })
    .then((res) => {
      if (res.status === 200) return [{ callId, status: 'recorded' }];
      if (res.status === 409) return [{ callId, status: 'outcome_already_recorded' }];
      throw new Error(`single report answered ${res.status}`);
    });

it("records each raced outcome once, and the tree grows by exactly one leaf per outcome, each its record's", async () => {
  const checked = new Map<string, string[]>();
  let rootId = '';
  for (let round = 0; round < ROUNDS; round += 1) {
    // A grant of its own every 25 rounds: a grant's calls are listed (and budgeted) together.
    if (round % 25 === 0) rootId = (await chainOf(service, world, 0)).rootId;
    const calls: string[] = [];
    for (let i = 0; i < CALLS; i += 1) {
      const res = await checkAs(service, world, rootId, world.agent).expect(200);
      expect(res.body.decision).toBe('allow');
      calls.push(res.body.callId);
    }
    checked.set(rootId, [...(checked.get(rootId) ?? []), ...calls]);
    const before = await treeSize();
    const sent = calls.map((callId, i) => ({ callId, outcome: i % 2 ? 'failed' : 'succeeded', durationMs: round }));
    // An id spelled in capitals is no call's (ids are lower-case): it must neither be found nor write.
    const shouted = { callId: calls[1]!.toUpperCase(), outcome: 'succeeded' };
    const answers = (
      await Promise.all([
        batch(sent),
        batch([sent[0]!, ...sent]),
        batch([...sent].reverse()),
        batch([sent[3]!, sent[1]!, sent[3]!]),
        batch([shouted, sent[2]!]).then((results) => results.filter((each) => each.callId !== shouted.callId)),
        single(calls[0]!, 'failed'),
        single(calls[2]!, 'succeeded'),
        batch(sent),
      ])
    ).flat();
    const grown = (await treeSize()) - before;
    const stored = await db.raw(
      `select r.id::text as id, r.outcome, r.outcome_leaf_index from call_records r where r.id = any(?::uuid[])`,
      [calls.map((callId) => uuidOf('call', callId))],
    );
    const seen = { round, before, grown, answers, stored: stored.rows };
    for (const callId of calls) {
      const statuses = answers.filter((each) => each.callId === callId).map((each) => each.status);
      expect({ ...seen, recorded: statuses.filter((status) => status === 'recorded').length }).toEqual({ ...seen, recorded: 1 });
      expect(statuses.filter((status) => status !== 'recorded' && status !== 'outcome_already_recorded')).toEqual([]);
    }
    expect(seen).toEqual({ ...seen, grown: CALLS });

    // Every leaf appended in the round is one record's outcome leaf: the records name the round's leaves, each once.
    const listed = (await service.http.get(`/api/grants/${rootId}/calls?limit=${CALLS}`).set(world.owner.auth).expect(200)).body
      .items as Listed[];
    expect(listed.map((record) => record.id).sort()).toEqual([...calls].sort());
    const named = listed.map((record) => record.outcomeLeafIndex).sort((a, b) => a! - b!);
    expect({ round, named }).toEqual({ round, named: calls.map((_, i) => before + i) });
  }

  // Each outcome of every round proven against a signed checkpoint that holds them all.
  const size = await treeSize();
  const key = (await service.http.get('/api/trail/key').expect(200)).text.trim();
  let checkpoint = openCheckpoint((await service.http.get('/api/trail/checkpoint').expect(200)).text, key);
  for (let i = 0; i < 200 && checkpoint.size < size; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    checkpoint = openCheckpoint((await service.http.get('/api/trail/checkpoint').expect(200)).text, key);
  }
  for (const [grantId, calls] of checked) {
    const records = await listedCallsOf<Listed>(service, world.owner.auth, grantId);
    expect(records.map((record) => record.id).sort()).toEqual([...calls].sort());
    for (const record of records) {
      const proof = await service.http
        .get(`/api/trail/proofs/inclusion?callId=${record.id}&leaf=outcome&treeSize=${checkpoint.size}`)
        .set(world.owner.auth)
        .expect(200);
      expect(proof.body.leafIndex).toBe(record.outcomeLeafIndex);
      const hashes = (proof.body.hashes as string[]).map((hash) => Buffer.from(hash, 'base64'));
      expect(verifyInclusion(record.outcomeLeafIndex!, checkpoint.size, leafHash(outcomeLeaf(record)), hashes, checkpoint.root)).toBe(true);
    }
  }
});

it('refuses, in Postgres, a completion that appended more outcome leaves than it completed records', async () => {
  await expect(db.raw('select trail_outcome_leaves_match(2, 1)')).rejects.toThrow(
    'trail: 2 outcome leaves appended for 1 records completed',
  );
  expect((await db.raw('select trail_outcome_leaves_match(3, 3) as ok')).rows).toEqual([{ ok: true }]);
});
