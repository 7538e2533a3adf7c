import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from '@grant-broker/client';
import { RuntimeApiError, RuntimeClient, type AgentEvent } from '../../examples/agent/client';
import { handleEvent, withApprovals } from '../../examples/agent/handler';
import { FileResultStore } from '../../examples/agent/store';
import { processEvent, runForever, runOnce } from '../../examples/agent/worker';
import { ApprovalWaits, type ToolCall } from '../../examples/agent/approvals';
import { brokeredCalls } from '../../examples/agent/calls';
import { CodeHostConnector } from '../../gateway/src/github/connector';
import { toolNamed } from '../../gateway/src/github/tools';
import { brokerWorld, type BrokerWorld } from '../support/broker-world';
import { startCodeHost, type CodeHost } from '../support/code-host';
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

/** A fetch that loses the requests `lost` picks (before they leave): a network failure, nothing else mocked. */
const losing =
  (lost: (url: string, body: string) => boolean): typeof fetch =>
  async (input, init) => {
    const request = new Request(input, init);
    if (lost(request.url, await request.clone().text())) throw new Error('connection reset before the request left');
    return fetch(request);
  };

describe('example agent against the real service', () => {
  /** Leases end when this clock says. */
  const clock = new ManualClock();
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ EVENT_VISIBILITY_TIMEOUT_MS: '1000' }, { clock });
  });
  afterAll(() => service.close());

  it("polls through the SDK's event iterator, handles, persists and acks; a lost ack leads to a redelivery that is only acked", async () => {
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    const agent = await installAgent(service, owner, podId, 'example-bot');
    await drain(service, agent);
    const client = new RuntimeClient(service.baseUrl, agent.token);
    const store = new FileResultStore(dir);
    const handle = jest.fn(handleEvent);
    const bob = human(service, 'bob');
    await service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: bob.userId, role: 'member' }).expect(201);

    // First run: the process "dies" after persisting, before its ack reaches the service.
    const lostAck = new RuntimeClient(
      service.baseUrl,
      agent.token,
      losing((url) => url.endsWith('/ack')),
    );
    const errors: unknown[] = [];
    const acked: unknown[] = [];
    expect(await runOnce(lostAck, store, handle, { onError: (e) => errors.push(e), onProcessed: (p) => acked.push(p) })).toBe(0);
    expect(acked).toEqual([]);
    expect(errors).toEqual([new Error('connection reset before the request left')]);
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
    const client = new RuntimeClient(service.baseUrl, 'art_not-a-real-token');
    const loop = runForever(client, new FileResultStore(dir), handleEvent, { waitMs: 0 });
    await expect(loop).rejects.toBeInstanceOf(RuntimeApiError);
    await expect(loop).rejects.toMatchObject({ status: 401, code: 'unauthenticated', credentialRejected: true });
  });
});

describe('example agent: a write that waits for a human (CONTRACT §9)', () => {
  const clock = new ManualClock();
  let service: TestService;
  let codeHost: CodeHost;
  let world: BrokerWorld;
  let grantId: string;
  beforeAll(async () => {
    service = await startService({ EVENT_VISIBILITY_TIMEOUT_MS: '1000' }, { clock });
    codeHost = await startCodeHost();
  });
  beforeEach(async () => {
    world = await brokerWorld(service);
    const grant = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'pod', id: world.podId },
      { tools: ['issues.create_comment'], writeMode: 'approve' },
    );
    grantId = grant.id;
    await drain(service, world.agent);
  });
  afterAll(async () => {
    await codeHost.close();
    await service.close();
  });

  const comment = (body: string): ToolCall => ({
    grantId,
    tool: 'issues.create_comment',
    args: { repository: 'acme/api', issue: 1, body },
  });
  /** The agent's calls as main.ts makes them: the SDK's withCheck with the broker's token, then the connector. */
  const callsThrough = (fetchImpl: typeof fetch = fetch) =>
    brokeredCalls(createClient({ baseUrl: service.baseUrl, token: world.broker.token, fetch: fetchImpl }), world.agent.token, (call) =>
      new CodeHostConnector(codeHost.url, codeHost.token).call(toolNamed(call.tool)!, call.args),
    );
  const approve = (approvalId: string, decision: 'approve' | 'deny' = 'approve') =>
    service.http.post(`/api/approvals/${approvalId}/${decision}`).set(world.owner.auth).send({}).expect(200);
  /** The agent's loop, through the SDK's event iterator, until no call waits (at most `polls` rounds). */
  const work = async (waits: ApprovalWaits, polls = 5) => {
    const client = new RuntimeClient(service.baseUrl, world.agent.token);
    const errors: unknown[] = [];
    const results: unknown[] = [];
    const store = new FileResultStore(dir);
    for (let i = 0; i < polls && waits.pending > 0; i += 1) {
      await runOnce(client, store, withApprovals(waits), {
        waitMs: 1000,
        onError: (error) => errors.push(error),
        onProcessed: (p) => p.event.type === 'approval.decided' && results.push(p.record.result),
      });
    }
    return { errors, results };
  };

  it('keeps the call, and re-sends it with the same arguments and the approvalId once approval.decided arrives', async () => {
    const waits = new ApprovalWaits(callsThrough());
    const first = await waits.call(comment('ship it'));
    expect(first).toMatchObject({ decision: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });
    expect(waits.pending).toBe(1);
    const commentsBefore = codeHost.comments.length;

    await approve(first.approvalId!);
    const { errors, results } = await work(waits);
    expect(errors).toEqual([]);
    expect(waits.pending).toBe(0);
    expect(results).toEqual([
      {
        note: 'issues.create_comment re-sent with its approval: allow (allowed)',
        answer: expect.objectContaining({ decision: 'allow', result: { id: expect.any(Number), body: 'ship it' } }),
      },
    ]);
    expect(codeHost.comments.slice(commentsBefore)).toEqual([{ repository: 'acme/api', issue: 1, body: 'ship it' }]);
    const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(world.owner.auth).expect(200);
    expect(calls.body.items[0]).toMatchObject({ outcome: 'succeeded', approvalId: first.approvalId, approvedBy: world.owner.userId });
  });

  it('a re-send that fails keeps the call: the redelivered approval.decided sends it again, and it is made once', async () => {
    let lost = 0;
    const waits = new ApprovalWaits(
      callsThrough(losing((url, body) => url.endsWith('/api/broker/check') && body.includes('"approvalId"') && (lost += 1) === 1)),
    );
    const first = await waits.call(comment('retry me'));
    await approve(first.approvalId!);
    const commentsBefore = codeHost.comments.length;

    const failed = await work(waits, 1);
    expect(lost).toBe(1);
    expect(failed.errors).toEqual([new Error('connection reset before the request left')]);
    expect(waits.pending).toBe(1); // not forgotten before the re-send was answered
    expect(codeHost.comments.length).toBe(commentsBefore);

    clock.advance(1100); // the unacknowledged approval.decided comes back
    const again = await work(waits);
    expect(again.errors).toEqual([]);
    expect(again.results).toEqual([expect.objectContaining({ answer: expect.objectContaining({ decision: 'allow' }) })]);
    expect(waits.pending).toBe(0);
    expect(codeHost.comments.slice(commentsBefore)).toEqual([{ repository: 'acme/api', issue: 1, body: 'retry me' }]);
  });

  it('a denied approval drops the call: nothing is re-sent', async () => {
    const waits = new ApprovalWaits(callsThrough());
    const first = await waits.call(comment('no way'));
    await approve(first.approvalId!, 'deny');
    const { errors, results } = await work(waits);
    expect(errors).toEqual([]);
    expect(results).toEqual([{ note: 'issues.create_comment was not approved (denied): dropped' }]);
    expect(waits.pending).toBe(0);
    const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(world.owner.auth).expect(200);
    // The held call reads as the human ended it.
    expect(calls.body.items.map((c: { outcome: string; reason: string }) => [c.outcome, c.reason])).toEqual([
      ['denied', 'approval_denied'],
    ]);
  });

  it('the runnable agent (dist/examples/agent/main.js --call): waits for the human, re-sends, stops on SIGTERM', async () => {
    const main = path.resolve(__dirname, '../../dist/examples/agent/main.js');
    const args = JSON.stringify({ repository: 'acme/api', issue: 2, body: 'from the runnable agent' });
    const child = spawn(process.execPath, [main, '--call', 'issues.create_comment', args], {
      env: {
        PATH: process.env.PATH ?? '',
        GRANT_BROKER_URL: service.baseUrl,
        AGENT_TOKEN: world.agent.token,
        BROKER_TOKEN: world.broker.token,
        GRANT_ID: grantId,
        CONNECTOR_URL: codeHost.url,
        CONNECTOR_TOKEN: codeHost.token,
        RESULTS_DIR: dir,
        WAIT_MS: '2000',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const printed = async (pattern: RegExp) => {
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
        const match = pattern.exec(stdout);
        if (match) return match;
      }
      throw new Error(`the agent never printed ${pattern}; stdout: ${stdout}; stderr: ${stderr}`);
    };
    try {
      const [, approvalId] = await printed(
        /call issues\.create_comment: approval_required \(approval_required\) approval (apr_\w+), waiting/,
      );
      expect(codeHost.comments.some((c) => c.body === 'from the runnable agent')).toBe(false);
      await approve(approvalId!);
      await printed(/approval\.decided delivery=1 handled: .*re-sent with its approval: allow \(allowed\)/);
      expect(codeHost.comments.filter((c) => c.body === 'from the runnable agent')).toEqual([
        { repository: 'acme/api', issue: 2, body: 'from the runnable agent' },
      ]);
      const started = Date.now();
      child.kill('SIGTERM');
      expect(await exited).toBe(0); // the abort reaches the long poll in flight
      expect(Date.now() - started).toBeLessThan(1500);
      expect(stderr).toBe('');
      for (const secret of [world.agent.token, world.broker.token, codeHost.token]) expect(stdout).not.toContain(secret);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
