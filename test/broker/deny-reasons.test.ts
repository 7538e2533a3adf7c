import { ManualClock } from '../support/clock';
import { startService, type TestService } from '../support/service';
import { human } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord } from '../support/call-records';

let service: TestService;
const clock = new ManualClock();
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService({}, { clock });
  world = await brokerWorld(service);
});
afterAll(() => service.close());

async function expectDenied(res: { status: number; body: { callId: string } }, reason: string) {
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ decision: 'deny', reason });
  const record = await callRecord(service.deps.db, res.body.callId);
  expect(record).toMatchObject({ outcome: 'denied', reason });
}

describe('every deny reason, through HTTP', () => {
  it('not_found: a 404 problem (the grant does not exist for this broker)', async () => {
    const res = await checkAs(service, world, 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', world.agent);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('revoked: an ancestor was revoked', async () => {
    const { rootId, leafId } = await chainOf(service, world, 1);
    await service.http.post(`/api/grants/${rootId}/revoke`).set(world.owner.auth).expect(200);
    await expectDenied(await checkAs(service, world, leafId, world.agent), 'revoked');
  });

  it('expired', async () => {
    const { rootId } = await chainOf(service, world, 0, { expiresAt: new Date(clock.now() + 1200).toISOString() });
    clock.advance(1300);
    await expectDenied(await checkAs(service, world, rootId, world.agent), 'expired');
  });

  it('connection_disconnected', async () => {
    const separate = await brokerWorld(service);
    const { rootId } = await chainOf(service, separate, 0);
    await service.http
      .patch(`/api/connections/${separate.connectionId}`)
      .set(separate.owner.auth)
      .send({ status: 'disconnected' })
      .expect(200);
    await expectDenied(await checkAs(service, separate, rootId, separate.agent), 'connection_disconnected');
  });

  it('tool_not_allowed', async () => {
    const { rootId } = await chainOf(service, world, 0);
    await expectDenied(await checkAs(service, world, rootId, world.agent, { tool: 'issues.create_comment' }), 'tool_not_allowed');
  });

  it('write_not_allowed: a tool the provider reclassified as write after a read grant was made', async () => {
    // No API turns a read tool into a write tool, and grant creation refuses write tools under
    // writeMode read; the policy still guards the case. The row is edited directly to reach it.
    const separate = await brokerWorld(service);
    const { rootId } = await chainOf(service, separate, 0, { writeMode: 'read' });
    await service.deps
      .db('connection_tools')
      .where({ connection_id: separate.connectionId, name: 'repos.read_file' })
      .update({ access: 'write' });
    await service.deps.invalidation.touch('connection', separate.connectionId);
    await expectDenied(await checkAs(service, separate, rootId, separate.agent), 'write_not_allowed');
  });

  it('principal_not_in_audience: someone outside the pod, and a member outside a listed audience', async () => {
    const { rootId } = await chainOf(service, world, 0);
    await expectDenied(await checkAs(service, world, rootId, human(service, 'stranger')), 'principal_not_in_audience');
    const listed = await chainOf(service, world, 0, { audience: [world.agent.agentId] });
    await expectDenied(await checkAs(service, world, listed.rootId, world.member), 'principal_not_in_audience');
  });

  it('runtime_stopped: the kill switch', async () => {
    const separate = await brokerWorld(service);
    const { rootId } = await chainOf(service, separate, 0);
    await service.http
      .post(`/api/registry/pods/${separate.podId}/agents/${separate.agent.name}/runtime-stop`)
      .set(separate.owner.auth)
      .expect(200);
    await expectDenied(await checkAs(service, separate, rootId, separate.agent), 'runtime_stopped');
    // A human member of the same pod is not affected by the agent's kill switch.
    expect((await checkAs(service, separate, rootId, separate.member)).body.decision).toBe('allow');
  });

  it('budget_exhausted, with retryAfterMs and a Retry-After header in whole seconds', async () => {
    const { rootId } = await chainOf(service, world, 0, { budget: { calls: 1, windowMs: 90_500 } });
    expect((await checkAs(service, world, rootId, world.agent)).body.decision).toBe('allow');
    const res = await checkAs(service, world, rootId, world.agent);
    await expectDenied(res, 'budget_exhausted');
    expect(res.body.retryAfterMs).toBeGreaterThan(89_000);
    expect(res.body.retryAfterMs).toBeLessThanOrEqual(90_500);
    expect(res.headers['retry-after']).toBe(String(Math.ceil(res.body.retryAfterMs / 1000)));
    expect(res.body.budget).toMatchObject({ remaining: 0 });
  });
});
