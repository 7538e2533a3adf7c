import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiProblem, ApprovalRequired, CallDenied, createClient } from '../../clients/typescript/src';
import { brokerWorld, chainOf, type BrokerWorld } from '../support/broker-world';
import { drain } from '../support/events';
import { startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';

/**
 * The TypeScript SDK (clients/typescript) against the real service: typed calls, problems as
 * ApiProblem with the service's code, the broker's check → call → outcome loop, an approval
 * waited for and used, the agent's event loop, and retries of a 503 honouring Retry-After.
 */
let service: TestService;
let world: BrokerWorld;
const asOwner = () => createClient({ baseUrl: service.baseUrl, token: world.owner.token });
const asBroker = () => createClient({ baseUrl: service.baseUrl, token: world.broker.token });
const asAgent = () => createClient({ baseUrl: service.baseUrl, token: world.agent.token });

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

it('calls are typed, and a problem is an ApiProblem with its code', async () => {
  const owner = asOwner();
  const grant = await owner.unwrap(
    owner.api.POST('/api/grants', {
      body: { connectionId: world.connectionId, target: { kind: 'pod', id: world.podId }, tools: ['repos.read_file'] },
    }),
  );
  expect(grant).toMatchObject({ id: expect.stringMatching(/^grt_/), writeMode: 'read', status: 'active' });
  const missing = owner.unwrap(owner.api.GET('/api/grants/{grantId}', { params: { path: { grantId: 'grt_nope' } } }));
  await expect(missing).rejects.toBeInstanceOf(ApiProblem);
  await expect(missing).rejects.toMatchObject({ status: 404, code: 'not_found' });
});

it('withCheck runs the call only on allow and records its outcome; a deny is a CallDenied', async () => {
  const broker = asBroker();
  const { leafId } = await chainOf(service, world, 1);
  const made = await broker.withCheck(
    { grantId: leafId, tool: 'repos.read_file', args: { path: 'a' }, subjectToken: world.agent.token },
    async () => 'file body',
  );
  expect(made.result).toBe('file body');
  const [record] = await service.deps.db('call_records').where({ id: made.check.callId }).select('outcome');
  expect(record.outcome).toBe('succeeded');

  let ran = false;
  const denied = broker.withCheck({ grantId: leafId, tool: 'pulls.merge', args: {}, subjectToken: world.agent.token }, async () => {
    ran = true;
  });
  await expect(denied).rejects.toBeInstanceOf(CallDenied);
  await expect(denied).rejects.toMatchObject({ reason: 'tool_not_allowed' });
  expect(ran).toBe(false);
});

it('a write under approve: ApprovalRequired, a human approves, the broker waits and re-sends once', async () => {
  const broker = asBroker();
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    {
      tools: ['issues.create_comment'],
      writeMode: 'approve',
    },
  );
  const call = { grantId: grant.id, tool: 'issues.create_comment', args: { issue: 3 }, subjectToken: world.agent.token };
  const asked = await broker.withCheck(call, async () => 'never').catch((error: unknown) => error);
  expect(asked).toBeInstanceOf(ApprovalRequired);
  const { approvalId } = asked as ApprovalRequired;

  const waiting = broker.waitForApproval(approvalId, { timeoutMs: 5000 });
  const owner = asOwner();
  await owner.unwrap(owner.api.POST('/api/approvals/{approvalId}/approve', { params: { path: { approvalId } }, body: {} }));
  expect((await waiting).state).toBe('approved');
  const made = await broker.withCheck({ ...call, approvalId }, async () => 'commented');
  expect(made.result).toBe('commented');
  await expect(broker.withCheck({ ...call, approvalId }, async () => 'again')).rejects.toMatchObject({ reason: 'approval_used' });
});

it('the agent loop yields its events and acks them', async () => {
  await drain(service, world.agent);
  const grant = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId });
  const agent = asAgent();
  const stop = new AbortController();
  const seen: string[] = [];
  for await (const { event, ack } of agent.events({ waitMs: 1000, signal: stop.signal })) {
    seen.push(event.type);
    await ack();
    if (event.type === 'grant.created' && (event.data.grant as { id: string }).id === grant.id) stop.abort();
  }
  expect(seen).toContain('grant.created');
  const unacked = await service.deps.db('events').where({ agent_id: world.agent.agentId }).whereNull('acked_at').select('id');
  expect(unacked).toEqual([]);
});

it('retries a 503, honouring Retry-After, and answers the rest as it comes', async () => {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests += 1;
    if (requests === 1) {
      res.writeHead(503, { 'retry-after': '1', 'content-type': 'application/problem+json' }).end('{"code":"dependency_unavailable"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const client = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't' });
    const started = Date.now();
    const res = await client.api.GET('/healthz');
    expect(res.response.status).toBe(200);
    expect(requests).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
