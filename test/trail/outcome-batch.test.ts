import { startService, type TestService } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord } from '../support/call-records';

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
