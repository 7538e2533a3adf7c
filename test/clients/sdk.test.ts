import { ApiProblem, ApprovalRequired, CallDenied, OutcomeNotRecorded, createClient } from '@grant-broker/client';
import { brokerWorld, chainOf, type BrokerWorld } from '../support/broker-world';
import { ManualClock } from '../support/clock';
import { drain } from '../support/events';
import { startService, type TestService } from '../support/service';
import { startTcpProxy } from '../support/tcp-proxy';
import { rootGrant } from '../support/world';
import { callRecord, callRecordsOf } from '../support/call-records';

/**
 * The TypeScript SDK (clients/typescript) against the real service: typed calls, problems as
 * ApiProblem with the service's code, the broker's check → call → outcome loop, an approval
 * waited for and used, the agent's event loop (abort, leases, redelivery). Retries: sdk-retries.test.ts.
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
  const record = await callRecord(service.deps.db, made.check.callId);
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

describe('withCheck when the outcome cannot be reported', () => {
  // The report is lost on the way (a network failure); the check and the call itself are real.
  const losingReports: typeof fetch = (input, init) =>
    String(input instanceof Request ? input.url : input).endsWith('/outcome')
      ? Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }))
      : fetch(input, init);
  /** A broker client whose outcome reports are lost, and the errors it was told of. */
  const brokerLosingReports = () => {
    const told: OutcomeNotRecorded[] = [];
    const broker = createClient({
      baseUrl: service.baseUrl,
      token: world.broker.token,
      fetch: losingReports,
      onOutcomeError: (e) => told.push(e),
    });
    return { broker, told };
  };

  it('a call that succeeded keeps its result: outcomeError is returned and onOutcomeError told', async () => {
    const { leafId } = await chainOf(service, world, 1);
    const { broker, told } = brokerLosingReports();
    const made = await broker.withCheck(
      { grantId: leafId, tool: 'repos.read_file', args: { path: 'a' }, subjectToken: world.agent.token },
      async () => 'file body',
    );
    expect(made.result).toBe('file body');
    expect(made.outcomeError).toBeInstanceOf(OutcomeNotRecorded);
    expect(made.outcomeError).toMatchObject({ callId: made.check.callId, outcome: 'succeeded', cause: { message: 'fetch failed' } });
    expect(told).toEqual([made.outcomeError]);
    const record = () => callRecord(service.deps.db, made.check.callId);
    expect(await record()).toMatchObject({ outcome: 'pending' });
    // Reported again once the service can be reached: the record completes.
    await asBroker().recordOutcome(made.check.callId, 'succeeded');
    expect(await record()).toMatchObject({ outcome: 'succeeded' });
  });

  it("a call that failed throws its own error, not the report's", async () => {
    const { leafId } = await chainOf(service, world, 1);
    const { broker, told } = brokerLosingReports();
    const call = { grantId: leafId, tool: 'repos.read_file', args: { path: 'a' }, subjectToken: world.agent.token };
    const failing = broker.withCheck(call, async () => {
      throw Object.assign(new Error('the code host said no'), { code: 'not found: x/y' });
    });
    await expect(failing).rejects.toThrow('the code host said no');
    expect(told).toEqual([expect.objectContaining({ outcome: 'failed' })]);

    // With the report going through, the code is fitted to what the service takes (no report lost to a 400).
    const reported = asBroker().withCheck(call, async () => {
      throw Object.assign(new Error('again'), { code: 'not found: x/y' });
    });
    await expect(reported).rejects.toThrow('again');
    const [last] = await callRecordsOf(service.deps.db, leafId);
    expect(last).toMatchObject({ outcome: 'failed', error_code: 'not_found:_x_y' });
  });
});

describe('withCheck with batchOutcomes', () => {
  it('returns before the outcome is sent, then records the batch in one request; a batch the service did not take is sent again', async () => {
    const { leafId } = await chainOf(service, world, 0);
    let down = true;
    const batches: number[] = [];
    // The first batch is lost on the way; the next ones go through.
    const flaky: typeof fetch = async (input, init) => {
      if (String(input instanceof Request ? input.url : input).endsWith('/api/broker/outcomes')) {
        if (down) {
          down = false;
          throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
        }
        batches.push(((await (input as Request).clone().json()) as { outcomes: unknown[] }).outcomes.length);
      }
      return fetch(input, init);
    };
    const troubles: string[] = [];
    const broker = createClient({
      baseUrl: service.baseUrl,
      token: world.broker.token,
      fetch: flaky,
      batchOutcomes: { maxDelayMs: 5_000 },
      onOutcomeTrouble: (trouble) => troubles.push(trouble.kind),
    });
    const call = { grantId: leafId, tool: 'repos.read_file', args: { path: 'a' }, subjectToken: world.agent.token };
    const made = await Promise.all([1, 2, 3].map((n) => broker.withCheck(call, async () => n)));
    expect(made.map((each) => each.result)).toEqual([1, 2, 3]);
    // Nothing sent yet: the call's path did not wait for its report.
    const ids = made.map((each) => each.check.callId);
    for (const id of ids) expect(await callRecord(service.deps.db, id)).toMatchObject({ outcome: 'pending' });
    expect(broker.pendingOutcomes()).toBe(3);

    await broker.flushOutcomes(AbortSignal.timeout(10_000));
    expect(troubles).toEqual(['unreachable']);
    expect(batches).toEqual([3]);
    expect(broker.pendingOutcomes()).toBe(0);
    for (const id of ids) expect(await callRecord(service.deps.db, id)).toMatchObject({ outcome: 'succeeded' });
  });
});

describe('the agent loop: abort, leases, redelivery', () => {
  it('aborting ends the iteration during a long poll, not when the poll would have ended', async () => {
    await drain(service, world.agent);
    // Through a proxy closed at the end: after an abort, Node's fetch may open a spare connection it
    // never uses, which would hold the service's close until the server's headers timeout.
    const proxy = await startTcpProxy(Number(new URL(service.baseUrl).port));
    try {
      const agent = createClient({ baseUrl: proxy.url('http'), token: world.agent.token });
      const stop = new AbortController();
      const started = Date.now();
      setTimeout(() => stop.abort(), 300);
      const seen: string[] = [];
      for await (const { event } of agent.events({ waitMs: 20_000, signal: stop.signal })) seen.push(event.id);
      expect(seen).toEqual([]);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await proxy.close();
    }
  });

  describe('with leases of one second on a clock the test moves', () => {
    const clock = new ManualClock();
    let leased: TestService;
    let leasedWorld: BrokerWorld;
    beforeAll(async () => {
      leased = await startService({ EVENT_VISIBILITY_TIMEOUT_MS: '1000' }, { clock });
      leasedWorld = await brokerWorld(leased);
    });
    afterAll(() => leased.close());
    const agentOf = () => createClient({ baseUrl: leased.baseUrl, token: leasedWorld.agent.token });
    const grantCreated = async () => {
      const grant = await rootGrant(leased, leasedWorld.owner, leasedWorld.connectionId, { kind: 'pod', id: leasedWorld.podId });
      return grant.id;
    };
    const grantIdOf = (data: Record<string, unknown>) => (data.grant as { id: string }).id;

    it('an event not acked comes back once its lease has run out, and is acked then', async () => {
      await drain(leased, leasedWorld.agent);
      const grantId = await grantCreated();
      const stop = new AbortController();
      const deliveries: Array<[string, number]> = [];
      for await (const { event, ack } of agentOf().events({ waitMs: 5000, signal: stop.signal })) {
        if (event.type !== 'grant.created' || grantIdOf(event.data) !== grantId) {
          await ack();
          continue;
        }
        deliveries.push([event.id, event.deliveryCount]);
        if (event.deliveryCount === 1)
          clock.advance(1100); // "crashed" before the ack: the lease runs out
        else {
          await ack();
          stop.abort();
        }
      }
      expect(deliveries).toEqual([
        [deliveries[0]![0], 1],
        [deliveries[0]![0], 2],
      ]);
      const row = await leased.deps.db('events').where({ id: deliveries[0]![0] }).first('acked_at', 'delivery_count');
      expect(row).toMatchObject({ acked_at: expect.any(Date), delivery_count: 2 });
    });

    it('an event whose lease ran out while the ones before it were handled is not yielded; it comes back', async () => {
      await drain(leased, leasedWorld.agent);
      const first = await grantCreated();
      const second = await grantCreated();
      const stop = new AbortController();
      const yielded: Array<[string, number]> = [];
      for await (const { event, ack, leaseExpiresAt } of agentOf().events({ waitMs: 5000, leaseMs: 300, signal: stop.signal })) {
        yielded.push([grantIdOf(event.data), event.deliveryCount]);
        expect(leaseExpiresAt).toBeGreaterThan(Date.now());
        await ack();
        if (grantIdOf(event.data) === first) {
          // Handling the first takes longer than the lease: the service may hand the second to someone else.
          await new Promise((resolve) => setTimeout(resolve, 400));
          clock.advance(1100);
        } else stop.abort();
      }
      expect(yielded).toEqual([
        [first, 1],
        [second, 2],
      ]);
    });
  });
});
