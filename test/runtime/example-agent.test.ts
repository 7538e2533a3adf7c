import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RuntimeApiError, RuntimeClient, type AgentEvent } from '../../examples/agent/client';
import { handleEvent } from '../../examples/agent/handler';
import { FileResultStore } from '../../examples/agent/store';
import { processEvent, runForever, runOnce } from '../../examples/agent/worker';
import { ApprovalWaits, type CallAnswer, type CallTool } from '../../examples/agent/approvals';
import { brokerWorld, checkAs } from '../support/broker-world';
import { human, installAgent, podWith, rootGrant } from '../support/world';
import { ManualClock } from '../support/clock';
import { startService, type TestService } from '../support/service';
import { drain } from '../support/events';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'example-agent-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const event = (id: string, deliveryCount = 1): AgentEvent => ({
  id,
  type: 'pod.member_added',
  podId: 'pod_1',
  occurredAt: '2026-11-22T10:00:00.000Z',
  deliveryCount,
  data: { memberId: 'bob', kind: 'human' },
});

describe('example agent: idempotency by event id (unit)', () => {
  it('handles, persists, then acks a new event', async () => {
    const store = new FileResultStore(dir);
    const order: string[] = [];
    const handle = jest.fn(() => {
      order.push('handle');
      return { note: 'done' };
    });
    const ack = jest.fn(async () => {
      order.push(`ack:${(await store.get('evt_01a'))?.result ? 'persisted' : 'missing'}`);
    });
    const processed = await processEvent(event('evt_01a'), store, handle, ack);
    expect(processed.fresh).toBe(true);
    expect(order).toEqual(['handle', 'ack:persisted']);
    expect(await store.get('evt_01a')).toMatchObject({ eventId: 'evt_01a', type: 'pod.member_added', result: { note: 'done' } });
  });

  it('a crash between persist and ack causes no second effect when the event comes back', async () => {
    const store = new FileResultStore(dir);
    const handle = jest.fn(() => ({ note: 'effect' }));
    const crashingAck = jest.fn(async () => {
      throw new Error('process died before the ack');
    });
    await expect(processEvent(event('evt_01b'), store, handle, crashingAck)).rejects.toThrow('process died');
    // A fresh process (a new store over the same directory) gets the redelivery.
    const ack = jest.fn(async () => undefined);
    const again = await processEvent(event('evt_01b', 2), new FileResultStore(dir), handle, ack);
    expect(again.fresh).toBe(false);
    expect(handle).toHaveBeenCalledTimes(1);
    expect(ack).toHaveBeenCalledWith('evt_01b');
  });

  it('a crash before persisting handles the event again, leaving no partial file behind', async () => {
    const store = new FileResultStore(dir);
    const handle = jest.fn().mockRejectedValueOnce(new Error('crash while handling')).mockReturnValue({ note: 'ok' });
    const ack = jest.fn(async () => undefined);
    await expect(processEvent(event('evt_01c'), store, handle, ack)).rejects.toThrow('crash while handling');
    expect(ack).not.toHaveBeenCalled();
    expect(await readdir(dir).catch(() => [])).toEqual([]);
    expect((await processEvent(event('evt_01c', 2), store, handle, ack)).fresh).toBe(true);
    expect(await readdir(dir)).toEqual(['evt_01c.json']);
  });

  it('never turns something that is not an event id into a file name', async () => {
    const store = new FileResultStore(dir);
    await expect(store.get('../../etc/passwd')).rejects.toThrow('not an event id');
    await expect(store.put({ eventId: 'evt_/x', type: 't', handledAt: '', result: null })).rejects.toThrow('not an event id');
  });

  it('says something for every event type', () => {
    expect(handleEvent({ ...event('evt_1'), type: 'runtime.stop_requested' }).note).toMatch(/stopped/);
    expect(handleEvent({ ...event('evt_1'), type: 'grant.revoked', data: { grantId: 'grt_1' } }).note).toBe('grant.revoked grt_1');
    expect(handleEvent({ ...event('evt_1'), type: 'grant.created', data: { grant: { id: 'grt_2' } } }).note).toBe('grant.created grt_2');
    // A type this agent was written before: the service may add event types (spec §6).
    expect(handleEvent({ ...event('evt_1'), type: 'something.new' as AgentEvent['type'] }).note).toMatch(/unknown/);
  });
});

describe('example agent against the real service', () => {
  /** Leases end when this clock says. */
  const clock = new ManualClock();
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ EVENT_VISIBILITY_TIMEOUT_MS: '1000' }, { clock });
  });
  afterAll(() => service.close());

  it('polls, handles, persists and acks; a lost ack leads to a redelivery that is only acked', async () => {
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    const agent = await installAgent(service, owner, podId, 'example-bot');
    await drain(service, agent);
    const baseUrl = new URL(service.http.get('/').url).origin;
    const client = new RuntimeClient(baseUrl, agent.token);
    const store = new FileResultStore(dir);
    const handle = jest.fn(handleEvent);
    const bob = human(service, 'bob');
    await service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: bob.userId, role: 'member' }).expect(201);

    // First run: the process "dies" after persisting, before its ack reaches the service.
    const lostAck = new RuntimeClient(baseUrl, agent.token);
    lostAck.ack = async () => {
      throw new Error('crashed before ack');
    };
    const errors: unknown[] = [];
    const acked: unknown[] = [];
    await runOnce(lostAck, store, handle, { onError: (e) => errors.push(e), onProcessed: (p) => acked.push(p) });
    expect(acked).toEqual([]);
    expect(errors).toEqual([new Error('crashed before ack')]);
    expect(handle).toHaveBeenCalledTimes(1);

    // After the lease the service delivers it again; the restarted agent only acks it.
    clock.advance(1100);
    const seen: Array<{ fresh: boolean; deliveryCount: number }> = [];
    await runOnce(client, store, handle, { onProcessed: (p) => seen.push({ fresh: p.fresh, deliveryCount: p.event.deliveryCount }) });
    expect(seen).toEqual([{ fresh: false, deliveryCount: 2 }]);
    expect(handle).toHaveBeenCalledTimes(1);
    const [file] = await readdir(dir);
    expect((await store.get(file!.replace('.json', '')))?.result).toEqual({ note: `welcome ${bob.userId} (human) to ${podId}` });
    clock.advance(1100);
    expect(await client.poll()).toEqual([]);
  });

  it('stops for good on a rejected credential', async () => {
    const client = new RuntimeClient(new URL(service.http.get('/').url).origin, 'art_not-a-real-token');
    const loop = runForever(client, new FileResultStore(dir), handleEvent, { waitMs: 0 });
    await expect(loop).rejects.toBeInstanceOf(RuntimeApiError);
    await expect(loop).rejects.toMatchObject({ status: 401, code: 'unauthenticated', credentialRejected: true });
  });
});

describe('example agent: a write that waits for a human (CONTRACT §9)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(() => service.close());

  it('keeps the call, and re-sends it with the same arguments once approval.decided arrives', async () => {
    const world = await brokerWorld(service);
    const grant = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'pod', id: world.podId },
      { tools: ['issues.create_comment'], writeMode: 'approve' },
    );
    await drain(service, world.agent);
    // The broker's side, as a broker runs it for the agent: the check with the agent's own token.
    const callTool: CallTool = async (call) =>
      (
        await checkAs(service, world, call.grantId, world.agent, {
          tool: call.tool,
          args: call.args,
          ...(call.approvalId ? { approvalId: call.approvalId } : {}),
        })
      ).body as CallAnswer;
    const waits = new ApprovalWaits(callTool);
    const first = await waits.call({ grantId: grant.id, tool: 'issues.create_comment', args: { issue: 1, body: 'ship it' } });
    expect(first.decision).toBe('approval_required');
    expect(waits.pending).toBe(1);

    await service.http.post(`/api/approvals/${first.approvalId}/approve`).set(world.owner.auth).send({}).expect(200);
    const answers: CallAnswer[] = [];
    const notes: string[] = [];
    const handler = async (e: AgentEvent) => {
      if (e.type !== 'approval.decided') return handleEvent(e);
      const handled = await waits.onDecided(e);
      notes.push(handled.note);
      if (handled.answer) answers.push(handled.answer);
      return { note: handled.note };
    };
    const client = new RuntimeClient(service.baseUrl, world.agent.token);
    const errors: unknown[] = [];
    const store = new FileResultStore(dir);
    for (let polls = 0; polls < 10 && waits.pending > 0; polls += 1) {
      await runOnce(client, store, handler, {
        waitMs: 1000,
        onError: (error) => errors.push(error),
        onProcessed: (p) => notes.push(`${p.event.type} fresh=${p.fresh}`),
      });
    }
    expect(errors).toEqual([]);
    expect({ answers, notes }).toEqual({
      answers: [expect.objectContaining({ decision: 'allow', reason: 'allowed' })],
      notes: expect.anything(),
    });
    expect(waits.pending).toBe(0);
    const calls = await service.http.get(`/api/grants/${grant.id}/calls`).set(world.owner.auth);
    expect(calls.body.items[0]).toMatchObject({ outcome: 'pending', approvalId: first.approvalId, approvedBy: world.owner.userId });
  });
});
