import { ManualClock } from '../support/clock';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { human } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { resourceWorld } from '../support/resource-world';

/**
 * Every deny reason of the catalogue, through HTTP, answers the policy's explanation: the rule,
 * the level of the chain that refused (0 is the root), the grant there and what would unlock it;
 * the check's decision event holds the same object.
 */
let service: TestService;
const clock = new ManualClock();
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService({}, { clock });
  world = await brokerWorld(service);
});
afterAll(() => service.close());

type Answer = { status: number; body: { decision: string; reason: string; explanation?: Record<string, unknown> } };

async function expectExplained(res: Answer, reason: string, explanation: Record<string, unknown>) {
  expect(res.status).toBe(200);
  expect(res.body.reason).toBe(reason);
  expect(res.body.explanation).toEqual(explanation);
  await decisionsWritten();
  const events = service.logs.map((line) => JSON.parse(line) as { msg?: string; result?: { explanation?: unknown } });
  expect(events.some((e) => e.msg === 'decision' && JSON.stringify(e.result?.explanation) === JSON.stringify(explanation))).toBe(true);
}

const core = (reason: string) => `broker.check.${reason}`;

describe('every deny reason explains itself', () => {
  it('revoked: the revoked level nearest the root', async () => {
    const whole = await chainOf(service, world, 1);
    await service.http.post(`/api/grants/${whole.rootId}/revoke`).set(world.owner.auth).expect(200);
    await expectExplained(await checkAs(service, world, whole.leafId, world.agent), 'revoked', {
      rule: core('revoked'),
      level: 0,
      grantId: whole.rootId,
      unlock: 'ask_connection_owner',
    });
    const child = await chainOf(service, world, 1);
    await service.http.post(`/api/grants/${child.leafId}/revoke`).set(world.owner.auth).expect(200);
    await expectExplained(await checkAs(service, world, child.leafId, world.agent), 'revoked', {
      rule: core('revoked'),
      level: 1,
      grantId: child.leafId,
      unlock: 'attenuate_from_parent',
    });
  });

  it('expired', async () => {
    const { rootId } = await chainOf(service, world, 0, { expiresAt: new Date(clock.now() + 1200).toISOString() });
    clock.advance(1300);
    const expected = { rule: core('expired'), level: 0, grantId: rootId, unlock: 'ask_connection_owner' };
    await expectExplained(await checkAs(service, world, rootId, world.agent), 'expired', expected);
  });

  it('connection_disconnected: the connection owner', async () => {
    const separate = await brokerWorld(service);
    const { rootId, leafId } = await chainOf(service, separate, 1);
    await service.http
      .patch(`/api/connections/${separate.connectionId}`)
      .set(separate.owner.auth)
      .send({ status: 'disconnected' })
      .expect(200);
    const expected = { rule: core('connection_disconnected'), level: 0, grantId: rootId, unlock: 'ask_connection_owner' };
    await expectExplained(await checkAs(service, separate, leafId, separate.agent), 'connection_disconnected', expected);
  });

  it('tool_not_allowed: the level that leaves the tool out, with what it allows', async () => {
    const { rootId } = await chainOf(service, world, 0);
    await expectExplained(await checkAs(service, world, rootId, world.agent, { tool: 'issues.create_comment' }), 'tool_not_allowed', {
      rule: core('tool_not_allowed'),
      level: 0,
      grantId: rootId,
      dimension: 'tools',
      value: 'issues.create_comment',
      allowed: ['repos.read_file', 'pulls.list'],
      unlock: 'ask_connection_owner',
    });
  });

  it('write_not_allowed', async () => {
    const separate = await brokerWorld(service);
    const { rootId } = await chainOf(service, separate, 0, { writeMode: 'read' });
    await service.deps
      .db('connection_tools')
      .where({ connection_id: separate.connectionId, name: 'repos.read_file' })
      .update({ access: 'write' });
    await service.deps.invalidation.touch('connection', separate.connectionId);
    await expectExplained(await checkAs(service, separate, rootId, separate.agent), 'write_not_allowed', {
      rule: core('write_not_allowed'),
      level: 0,
      grantId: rootId,
      dimension: 'write_mode',
      value: 'write',
      allowed: ['read'],
      unlock: 'ask_connection_owner',
    });
  });

  it('resource_invalid, resource_unknown and resource_not_allowed', async () => {
    const resources = await resourceWorld(service);
    const grant = await resources.createGrant({ resources: { repositories: ['acme/*'] } }).expect(201);
    const id = grant.body.id as string;
    await expectExplained(await resources.check(id, 'repos.read_file', { repository: 'acme/../x' }), 'resource_invalid', {
      rule: core('resource_invalid'),
      level: 0,
      grantId: id,
      dimension: 'repository',
      value: 'acme/../x',
      unlock: 'none',
    });
    await expectExplained(await resources.check(id, 'repos.read_file', {}), 'resource_unknown', {
      rule: core('resource_unknown'),
      level: 0,
      grantId: id,
      dimension: 'repositories',
      allowed: ['acme/*'],
      unlock: 'none',
    });
    await expectExplained(await resources.check(id, 'repos.read_file', { repository: 'evil/api' }), 'resource_not_allowed', {
      rule: core('resource_not_allowed'),
      level: 0,
      grantId: id,
      dimension: 'repositories',
      value: 'evil/api',
      allowed: ['acme/*'],
      unlock: 'ask_connection_owner',
    });
  });

  it('principal_not_in_audience', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const stranger = human(service, 'stranger');
    await expectExplained(await checkAs(service, world, rootId, stranger), 'principal_not_in_audience', {
      rule: core('principal_not_in_audience'),
      level: 0,
      grantId: rootId,
      dimension: 'audience',
      value: stranger.userId,
      unlock: 'ask_connection_owner',
    });
  });

  it('runtime_stopped: nothing a grant changes', async () => {
    const separate = await brokerWorld(service);
    const { rootId, leafId } = await chainOf(service, separate, 1);
    await service.http
      .post(`/api/registry/pods/${separate.podId}/agents/${separate.agent.name}/runtime-stop`)
      .set(separate.owner.auth)
      .expect(200);
    const expected = { rule: core('runtime_stopped'), level: 1, grantId: leafId, unlock: 'none' };
    expect(rootId).not.toBe(leafId);
    await expectExplained(await checkAs(service, separate, leafId, separate.agent), 'runtime_stopped', expected);
  });

  it('budget_exhausted: the full level nearest the root, and wait', async () => {
    const { rootId, leafId } = await chainOf(service, world, 1, { budget: { calls: 1, windowMs: 90_000 } });
    expect((await checkAs(service, world, leafId, world.agent)).body.decision).toBe('allow');
    const res = await checkAs(service, world, leafId, world.agent);
    const expected = { rule: 'broker.charge.budget_exhausted', level: 0, grantId: rootId, unlock: 'wait' };
    await expectExplained(res, 'budget_exhausted', expected);
  });

  it('approval_required, approval_pending and approval_denied', async () => {
    const write = { tool: 'issues.create_comment', args: { issue: 7, body: 'LGTM' } };
    const { rootId } = await chainOf(service, world, 0, { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' });
    const asked = await checkAs(service, world, rootId, world.agent, write);
    expect(asked.body.decision).toBe('approval_required');
    const at = { level: 0, grantId: rootId };
    await expectExplained(asked, 'approval_required', { rule: core('approval_required'), ...at, unlock: 'request_approval' });
    const approvalId = asked.body.approvalId as string;
    const pending = await checkAs(service, world, rootId, world.agent, { ...write, approvalId });
    await expectExplained(pending, 'approval_pending', { rule: core('approval_pending'), ...at, unlock: 'wait' });
    await service.http.post(`/api/approvals/${approvalId}/deny`).set(world.owner.auth).send({}).expect(200);
    const denied = await checkAs(service, world, rootId, world.agent, { ...write, approvalId });
    await expectExplained(denied, 'approval_denied', { rule: core('approval_denied'), ...at, unlock: 'none' });
  });

  it('an allowed call carries no explanation', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const res = await checkAs(service, world, rootId, world.agent);
    expect(res.body.decision).toBe('allow');
    expect(res.body).not.toHaveProperty('explanation');
  });
});
