import { createHash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';
import { startService, type TestService } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord, listedCallsOf } from '../support/call-records';

/**
 * `POST /api/broker/outcomes`: a broker's outcomes in one request, each taken as the single report
 * takes it and durable before the answer; what one outcome cannot be is its own status, and a batch
 * sent again records nothing twice.
 */
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

async function checked(tool = 'repos.read_file'): Promise<{ callId: string; decision: string }> {
  const { rootId } = await chainOf(service, world, 0);
  const res = await checkAs(service, world, rootId, world.agent, { tool });
  return { callId: res.body.callId, decision: res.body.decision };
}

const batch = (auth: { Authorization: string }, outcomes: object[]) =>
  service.http.post('/api/broker/outcomes').set(auth).send({ outcomes });

it('records every outcome before answering, each with its status, and a repeated batch records nothing twice', async () => {
  const [a, b] = [await checked(), await checked()];
  const denied = await checked('no.such_tool');
  expect([a.decision, b.decision, denied.decision]).toEqual(['allow', 'allow', 'deny']);
  const sent = [
    { callId: a.callId, outcome: 'succeeded', durationMs: 12 },
    { callId: b.callId, outcome: 'failed', errorCode: 'upstream_timeout' },
    { callId: denied.callId, outcome: 'succeeded' },
    { callId: 'call_01jd0000000000000000000000', outcome: 'succeeded' },
  ];
  const res = await batch(world.broker.auth, sent).expect(200);
  expect(res.body.results).toEqual([
    { callId: a.callId, status: 'recorded' },
    { callId: b.callId, status: 'recorded' },
    { callId: denied.callId, status: 'call_denied' },
    { callId: 'call_01jd0000000000000000000000', status: 'not_found' },
  ]);
  // Durable at the answer: in Postgres as the answer says.
  expect(await callRecord(service.deps.db, a.callId)).toMatchObject({ outcome: 'succeeded', duration_ms: 12 });
  expect(await callRecord(service.deps.db, b.callId)).toMatchObject({ outcome: 'failed', error_code: 'upstream_timeout' });

  const again = await batch(world.broker.auth, [{ ...sent[0], outcome: 'failed' }]).expect(200);
  expect(again.body.results).toEqual([{ callId: a.callId, status: 'outcome_already_recorded' }]);
  expect(await callRecord(service.deps.db, a.callId)).toMatchObject({ outcome: 'succeeded' });
});

it("tells another broker nothing of a call (not_found), and leaves that call's record pending", async () => {
  const { callId } = await checked();
  const other = await broker(service, 'other-batch-broker');
  const res = await batch(other.auth, [{ callId, outcome: 'succeeded' }]).expect(200);
  expect(res.body.results).toEqual([{ callId, status: 'not_found' }]);
  expect(await callRecord(service.deps.db, callId)).toMatchObject({ outcome: 'pending' });
});

it.each([
  ['an empty batch', []],
  ['more than 100 outcomes', Array.from({ length: 101 }, () => ({ callId: 'call_x', outcome: 'succeeded' }))],
  ['an outcome that is neither', [{ callId: 'call_x', outcome: 'maybe' }]],
  ['a field the report does not have', [{ callId: 'call_x', outcome: 'succeeded', args: { secret: 1 } }]],
])('refuses %s as a 400 problem, recording nothing', async (_case, outcomes) => {
  const res = await batch(world.broker.auth, outcomes as object[]);
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
});

it('takes only a broker token', async () => {
  const { callId } = await checked();
  const res = await batch(world.agent.auth, [{ callId, outcome: 'succeeded' }]);
  expect([401, 403]).toContain(res.status);
  expect(await callRecord(service.deps.db, callId)).toMatchObject({ outcome: 'pending' });
});

/** RFC 9162 §2.1.3.2: the root an inclusion proof of `leaf` at `index` in a tree of `size` leaves makes. */
function rootOfProof(leaf: Buffer, index: number, size: number, proof: Buffer[]): Buffer {
  const node = (left: Buffer, right: Buffer) =>
    createHash('sha256')
      .update(Buffer.from([1]))
      .update(left)
      .update(right)
      .digest();
  let [fn, sn, r] = [index, size - 1, leaf];
  for (const p of proof) {
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
    } else r = node(r, p);
    [fn, sn] = [Math.floor(fn / 2), Math.floor(sn / 2)];
  }
  return r;
}

it("appends each recorded outcome's leaf once, however often and however concurrently the batch is sent, and its proof holds", async () => {
  const calls = [await checked(), await checked(), await checked()];
  const sent = calls.map(({ callId }, i) => ({ callId, outcome: i === 1 ? 'failed' : 'succeeded', durationMs: i }));
  const treeSize = async () => Number((await service.deps.db('trail_tree').first('size')).size);
  const before = await treeSize();
  // The same batch three times at once, one of them naming its first call twice.
  const answers = await Promise.all([
    batch(world.broker.auth, sent),
    batch(world.broker.auth, [sent[0]!, ...sent]),
    batch(world.broker.auth, [...sent].reverse()),
  ]);
  const statuses = answers.flatMap((res) => res.body.results as Array<{ callId: string; status: string }>);
  for (const { callId } of calls) {
    const of = statuses.filter((each) => each.callId === callId).map((each) => each.status);
    expect(of.filter((status) => status === 'recorded')).toHaveLength(1);
    expect(of.filter((status) => status !== 'recorded').every((status) => status === 'outcome_already_recorded')).toBe(true);
  }
  // Other test files write the same tree at once: its exact growth is outcome-race.test.ts's, on a database of its own.
  expect(await treeSize()).toBeGreaterThanOrEqual(before + calls.length);

  type Listed = { id: string; outcome: string; completedAt: string; outcomeLeafIndex: number };
  const records: Listed[] = [];
  for (const { callId } of calls) {
    const listed = await listedCallsOf<Listed>(service, world.owner.auth, (await callRecord(service.deps.db, callId)).grant_id);
    records.push(listed.find((record) => record.id === callId)!);
  }
  expect(new Set(records.map((record) => record.outcomeLeafIndex)).size).toBe(calls.length);
  for (const record of records) {
    expect(record.outcomeLeafIndex).toBeGreaterThanOrEqual(before);
  }
  // Each outcome's leaf, rebuilt from the record as read, is proven in a signed checkpoint's tree.
  let note = '';
  for (let i = 0; i < 200; i += 1) {
    note = (await service.http.get('/api/trail/checkpoint').expect(200)).text;
    if (Number(note.split('\n')[1]) >= before + calls.length) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const [, size, root] = note.split('\n');
  for (const record of records) {
    const leaf = Buffer.from(canonicalize({ callId: record.id, outcome: record.outcome, completedAt: record.completedAt }));
    const proof = await service.http
      .get(`/api/trail/proofs/inclusion?callId=${record.id}&leaf=outcome&treeSize=${size}`)
      .set(world.owner.auth)
      .expect(200);
    expect(proof.body.leafIndex).toBe(record.outcomeLeafIndex);
    const leafHash = createHash('sha256')
      .update(Buffer.from([0]))
      .update(leaf)
      .digest();
    const hashes = (proof.body.hashes as string[]).map((hash) => Buffer.from(hash, 'base64'));
    expect(rootOfProof(leafHash, record.outcomeLeafIndex, Number(size), hashes).toString('base64')).toBe(root);
  }
});

it('answers a call reported through another replica first as already recorded, whatever this replica remembers of it', async () => {
  const other = await startService();
  try {
    const { callId } = await checked(); // written, and remembered pending, by `service`
    const elsewhere = await other.http
      .post('/api/broker/outcomes')
      .set(world.broker.auth)
      .send({ outcomes: [{ callId, outcome: 'failed' }] });
    expect(elsewhere.body.results).toEqual([{ callId, status: 'recorded' }]);
    const recorded = await callRecord(service.deps.db, callId);
    expect(recorded.outcome_leaf_index).not.toBeNull();
    const here = await batch(world.broker.auth, [{ callId, outcome: 'succeeded' }]).expect(200);
    expect(here.body.results).toEqual([{ callId, status: 'outcome_already_recorded' }]);
    expect(await callRecord(service.deps.db, callId)).toMatchObject({ outcome: 'failed', outcome_leaf_index: recorded.outcome_leaf_index });
  } finally {
    await other.close();
  }
});

it('decides the same with the speed-ups off', async () => {
  const plain = await startService({ SPEEDUPS: 'off' });
  try {
    const [a, denied] = [await checked(), await checked('no.such_tool')];
    const other = await broker(service, 'plain-batch-broker');
    const sent = [
      { callId: a.callId, outcome: 'succeeded' },
      { callId: denied.callId, outcome: 'succeeded' },
    ];
    const send = (auth: { Authorization: string }) => plain.http.post('/api/broker/outcomes').set(auth).send({ outcomes: sent });
    expect((await send(other.auth)).body.results.map((each: { status: string }) => each.status)).toEqual(['not_found', 'not_found']);
    expect((await send(world.broker.auth)).body.results.map((each: { status: string }) => each.status)).toEqual([
      'recorded',
      'call_denied',
    ]);
    expect((await send(world.broker.auth)).body.results.map((each: { status: string }) => each.status)).toEqual([
      'outcome_already_recorded',
      'call_denied',
    ]);
  } finally {
    await plain.close();
  }
});
