import { ManualClock } from '../support/clock';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { rootGrant } from '../support/world';

/**
 * What people read of a call held for approval, over HTTP: the call trail says what became of it
 * once a human decided (or nobody did in time), not "awaiting approval" forever; and the call the
 * approval allowed says who approved it, in the trail and in the answer to its outcome report.
 */
let service: TestService;
let world: BrokerWorld;
const clock = new ManualClock();
const WRITE = { tool: 'issues.create_comment', args: { issue: 12, body: 'Ship it' } };

beforeAll(async () => {
  service = await startService({}, { clock });
  world = await brokerWorld(service);
});
afterAll(() => service.close());

async function heldCall() {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    { tools: ['issues.create_comment'], writeMode: 'approve' },
  );
  const held = await checkAs(service, world, grant.id, world.agent, WRITE);
  expect(held.body).toMatchObject({ decision: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });
  return { grantId: grant.id, callId: held.body.callId as string, approvalId: held.body.approvalId as string };
}

async function trail(grantId: string): Promise<Array<Record<string, unknown>>> {
  const res = await service.http.get(`/api/grants/${grantId}/calls`).set(world.owner.auth).expect(200);
  return res.body.items;
}

const decide = (approvalId: string, action: 'approve' | 'deny') =>
  service.http.post(`/api/approvals/${approvalId}/${action}`).set(world.owner.auth).send({}).expect(200);

it('reads awaiting_approval while pending, approved once approved; the call it allowed names its approver, outcome report included', async () => {
  const held = await heldCall();
  expect(await trail(held.grantId)).toEqual([
    expect.objectContaining({ id: held.callId, outcome: 'awaiting_approval', approvalId: held.approvalId, approvedBy: null }),
  ]);

  await decide(held.approvalId, 'approve');
  expect(await trail(held.grantId)).toEqual([
    expect.objectContaining({ id: held.callId, outcome: 'approved', reason: 'approval_required', approvedBy: world.owner.userId }),
  ]);

  const allowed = await checkAs(service, world, held.grantId, world.agent, { ...WRITE, approvalId: held.approvalId });
  expect(allowed.body).toMatchObject({ decision: 'allow' });
  const reported = await service.http
    .post(`/api/broker/calls/${allowed.body.callId}/outcome`)
    .set(world.broker.auth)
    .send({ outcome: 'succeeded', durationMs: 120 })
    .expect(200);
  expect(reported.body).toMatchObject({
    id: allowed.body.callId,
    outcome: 'succeeded',
    approvalId: held.approvalId,
    approvedBy: world.owner.userId,
  });

  expect(await trail(held.grantId)).toEqual([
    expect.objectContaining({ id: allowed.body.callId, outcome: 'succeeded', approvalId: held.approvalId, approvedBy: world.owner.userId }),
    expect.objectContaining({ id: held.callId, outcome: 'approved', approvedBy: world.owner.userId }),
  ]);
});

it('reads denied (approval_denied) once a human denied it', async () => {
  const held = await heldCall();
  await decide(held.approvalId, 'deny');
  expect(await trail(held.grantId)).toEqual([
    expect.objectContaining({ id: held.callId, outcome: 'denied', reason: 'approval_denied', approvalId: held.approvalId }),
  ]);
});

it('reads denied (approval_expired) once nobody decided in time, by the service clock', async () => {
  const held = await heldCall();
  clock.advance(15 * 60 * 1000 - 1);
  expect((await trail(held.grantId))[0]).toMatchObject({ outcome: 'awaiting_approval' });
  clock.advance(1);
  expect(await trail(held.grantId)).toEqual([
    expect.objectContaining({ id: held.callId, outcome: 'denied', reason: 'approval_expired', approvedBy: null }),
  ]);
});
