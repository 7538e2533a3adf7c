import { installAgent } from '../support/world';
import { APPROVAL_ARGS as ARGS, approvalGateway, type ApprovalGateway } from './support/approval-gateway';
import { call, httpAgent, stdioAgent, trail } from './support/gateway-world';

/**
 * An approval belongs to the call (agent, grant, tool, arguments), not to the MCP session it was
 * asked on. An agent asks, disconnects while a person decides, and comes back on a new session (of
 * the same gateway, or of a gateway process of its own over stdio): the approved call goes through
 * once, and only once, with the approval it was given; a second identical call needs a new one.
 * Another agent on the same grant, or other arguments, never ride on it.
 */
jest.setTimeout(60_000);

let suite: ApprovalGateway;
let world: ApprovalGateway['world'];

beforeAll(async () => {
  suite = await approvalGateway();
  world = suite.world;
});
afterAll(() => suite?.close());

const session = async (token: string, grantId: string) => {
  const client = await httpAgent(suite.gateway.url, token, grantId);
  suite.open.push(client);
  return client;
};
const reasonOf = (result: Awaited<ReturnType<typeof call>>) =>
  (result.structuredContent as { reason?: string } | undefined)?.reason ?? 'ok';
const approve = (approvalId: string) =>
  world.service.http.post(`/api/approvals/${approvalId}/approve`).set(world.owner.auth).send({ note: 'fine' }).expect(200);
const approvalIdOf = (result: Awaited<ReturnType<typeof call>>) => (result.structuredContent as { approvalId: string }).approvalId;

it('asked on one session, approved while the agent is away, allowed once on a new session', async () => {
  const grantId = await suite.approvalGrant();
  const first = await session(world.agent.token, grantId);
  const asked = await call(first, 'get-annotated-message', ARGS);
  expect(reasonOf(asked)).toBe('approval_required');
  const approvalId = approvalIdOf(asked);
  await first.close();

  // Back on a new session while the person has not decided: the same approval, still pending (not a second one).
  const waiting = await session(world.agent.token, grantId);
  expect(reasonOf(await call(waiting, 'get-annotated-message', ARGS))).toBe('approval_pending');
  await waiting.close();

  await approve(approvalId);
  const second = await session(world.agent.token, grantId);
  const allowed = await call(second, 'get-annotated-message', ARGS);
  expect(allowed.isError).toBeFalsy();
  // Once: the same call again asks a person afresh, for a new approval.
  const again = await call(second, 'get-annotated-message', ARGS);
  expect(reasonOf(again)).toBe('approval_required');
  expect(approvalIdOf(again)).not.toBe(approvalId);

  const { items } = await trail(world, grantId);
  // The held call reads as its approval ended (approved, then used by the allowed call); the last one still waits.
  expect(items.map((item) => `${item.outcome}:${item.reason}`)).toEqual([
    'approved:approval_required',
    'denied:approval_pending',
    'succeeded:allowed',
    'awaiting_approval:approval_required',
  ]);
  const used = await world.service.http.get(`/api/approvals/${approvalId}`).set(world.owner.auth).expect(200);
  expect(used.body).toMatchObject({ id: approvalId, state: 'used' });
  expect((items[2] as { approvalId?: string }).approvalId).toBe(approvalId);
});

it('comes back through a gateway process of its own (stdio): allowed once there', async () => {
  const grantId = await suite.approvalGrant();
  const asked = await call(await session(world.agent.token, grantId), 'get-annotated-message', ARGS);
  await approve(approvalIdOf(asked));
  const stdio = await stdioAgent(suite.configFile, {
    GATEWAY_BROKER_TOKEN: world.brokerToken,
    GRANT_ID: grantId,
    AGENT_TOKEN: world.agent.token,
  });
  suite.open.push(stdio);
  expect((await call(stdio, 'get-annotated-message', ARGS)).isError).toBeFalsy();
  expect(reasonOf(await call(stdio, 'get-annotated-message', ARGS))).toBe('approval_required');
});

it('the approved call sent on two new sessions at once is allowed exactly once', async () => {
  const grantId = await suite.approvalGrant();
  const asked = await call(await session(world.agent.token, grantId), 'get-annotated-message', ARGS);
  await approve(approvalIdOf(asked));
  // Two processes of the same agent (one gateway session per agent token and grant): two tokens of it.
  const other = await world.service.http
    .post(`/api/registry/pods/${world.podId}/agents/${world.agent.name}/runtime-tokens`)
    .set(world.owner.auth)
    .send({ name: 'second process' })
    .expect(201);
  const [a, b] = await Promise.all([session(world.agent.token, grantId), session(other.body.token as string, grantId)]);
  const results = await Promise.all([call(a, 'get-annotated-message', ARGS), call(b, 'get-annotated-message', ARGS)]);
  const [allowed, refused] = reasonOf(results[0]!) === 'ok' ? results : [results[1]!, results[0]!];
  expect(reasonOf(allowed!)).toBe('ok');
  // The other one either raced the claim on the approval (found it approved, then used) or came
  // after the allowed call had used it, and then asks a person afresh, as any later identical call.
  const refusedFor = reasonOf(refused!);
  expect(['approval_used', 'approval_required']).toContain(refusedFor);
  if (refusedFor === 'approval_required') expect(approvalIdOf(refused!)).not.toBe(approvalIdOf(asked));
  expect((await trail(world, grantId)).items.filter((item) => item.outcome === 'succeeded')).toHaveLength(1);
  const used = await world.service.http
    .get(`/api/approvals/${approvalIdOf(asked)}`)
    .set(world.owner.auth)
    .expect(200);
  expect(used.body).toMatchObject({ state: 'used' });
});

it('never covers another agent on the same grant, nor other arguments', async () => {
  const grantId = await suite.approvalGrant();
  const asked = await call(await session(world.agent.token, grantId), 'get-annotated-message', ARGS);
  await approve(approvalIdOf(asked));
  const colleague = await installAgent(world.service, world.owner, world.podId, 'colleague');
  const theirs = await call(await session(colleague.token, grantId), 'get-annotated-message', ARGS);
  expect(reasonOf(theirs)).toBe('approval_required');
  expect(approvalIdOf(theirs)).not.toBe(approvalIdOf(asked));
  const mine = await session(world.agent.token, grantId);
  expect(reasonOf(await call(mine, 'get-annotated-message', { ...ARGS, messageType: 'error' }))).toBe('approval_required');
  // The approved call itself is still there for its own agent.
  expect((await call(mine, 'get-annotated-message', ARGS)).isError).toBeFalsy();
});
