import { Webhook } from 'standardwebhooks';
import { ManualClock } from '../support/clock';
import { sleep } from '../support/events';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { human, podWith, rootGrant, type Human } from '../support/world';
import { startReceiver } from './receiver';

/**
 * Approval webhooks over HTTP with a real receiver on 127.0.0.1 (so WEBHOOK_ALLOW_PRIVATE=true
 * here): managed by the pod's owners and admins only, signed as Standard Webhooks (verified with
 * the `standardwebhooks` package itself), delivered from the outbox at least once with backoff by
 * the service's clock, carrying the approval without its arguments and a link to its console page.
 */
let service: TestService;
let world: BrokerWorld;
let admin: Human;
const clock = new ManualClock();
const PUBLIC_URL = 'https://broker.example.test';

beforeAll(async () => {
  service = await startService({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_DELIVERY: 'true', PUBLIC_URL }, { clock });
  world = await brokerWorld(service);
  admin = human(service, 'admin');
  await service.http
    .post(`/api/pods/${world.podId}/members`)
    .set(world.owner.auth)
    .send({ userId: admin.userId, role: 'admin' })
    .expect(201);
});
afterAll(async () => {
  await service.close();
});

const hooks = (podId = world.podId) => `/api/pods/${podId}/webhooks`;
const create = (url: string, who: Human = world.owner, events = ['approval.requested', 'approval.decided']) =>
  service.http.post(hooks()).set(who.auth).send({ url, events });

async function askApproval(args: Record<string, unknown>) {
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
  const res = await checkAs(service, world, grant.id, world.agent, { tool: 'issues.create_comment', args });
  expect(res.body.decision).toBe('approval_required');
  return res.body.approvalId as string;
}

/** Deletes the pod's webhooks, so each test counts only its own deliveries. */
async function clearWebhooks() {
  await service.deps.db('webhooks').where({ pod_id: world.podId }).delete();
}

describe('managing webhooks', () => {
  afterEach(clearWebhooks);

  it('owners and admins create, list, read and delete; the secret is shown once and kept sealed', async () => {
    const made = await create('http://127.0.0.1:9/approvals', admin, ['approval.requested']).expect(201);
    expect(made.body).toEqual({
      id: expect.stringMatching(/^whk_/),
      podId: world.podId,
      url: 'http://127.0.0.1:9/approvals',
      events: ['approval.requested'],
      createdBy: admin.userId,
      createdAt: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const row = await service.deps.db('webhooks').where({ id: made.body.id }).first();
    expect(row.secret_sealed.includes(Buffer.from(made.body.secret))).toBe(false);
    expect(row.secret_sealed.includes(Buffer.from(made.body.secret.slice(6), 'base64'))).toBe(false);

    const listed = await service.http.get(hooks()).set(world.owner.auth).expect(200);
    expect(listed.body.items.map((w: { id: string }) => w.id)).toEqual([made.body.id]);
    expect(JSON.stringify(listed.body)).not.toContain(made.body.secret);
    const one = await service.http.get(`${hooks()}/${made.body.id}`).set(world.owner.auth).expect(200);
    expect(one.body).not.toHaveProperty('secret');

    await service.http.delete(`${hooks()}/${made.body.id}`).set(world.owner.auth).expect(204);
    expectProblem(await service.http.get(`${hooks()}/${made.body.id}`).set(world.owner.auth), 404, 'not_found');
    expectProblem(await service.http.delete(`${hooks()}/${made.body.id}`).set(world.owner.auth), 404, 'not_found');
  });

  it('a member may not; another tenant learns nothing, even with the right ids', async () => {
    const made = await create('http://127.0.0.1:9/approvals').expect(201);
    expectProblem(await create('http://127.0.0.1:9/x', world.member), 403, 'not_pod_admin');
    expectProblem(await service.http.get(hooks()).set(world.member.auth), 403, 'not_pod_admin');

    const stranger = human(service, 'stranger');
    const theirPod = await podWith(service, stranger);
    expectProblem(await create('http://127.0.0.1:9/x', stranger), 404, 'not_found');
    expectProblem(await service.http.get(hooks()).set(stranger.auth), 404, 'not_found');
    expectProblem(await service.http.get(`${hooks()}/${made.body.id}`).set(stranger.auth), 404, 'not_found');
    expectProblem(await service.http.delete(`${hooks()}/${made.body.id}`).set(stranger.auth), 404, 'not_found');
    // Their own pod's path with our webhook's id: not theirs either.
    expectProblem(await service.http.get(`${hooks(theirPod)}/${made.body.id}`).set(stranger.auth), 404, 'not_found');
    expectProblem(await service.http.delete(`${hooks(theirPod)}/${made.body.id}`).set(stranger.auth), 404, 'not_found');
    expectProblem(await service.http.get(hooks()).set(world.agent.auth), 403, 'credential_not_accepted');
    expect(await service.deps.db('webhooks').where({ id: made.body.id }).first()).toBeDefined();
  });

  it('refuses hostile URLs and bodies with a 400 problem document', async () => {
    const invalid = [
      'http://user:pass@127.0.0.1/x',
      'http://user@127.0.0.1/x',
      'ftp://127.0.0.1/x',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'data:text/plain,hi',
      'gopher://127.0.0.1:6379/_FLUSHALL',
      'http://127.0.0.1/x#fragment',
      '/relative/path',
      'http://',
      `http://127.0.0.1/${'a'.repeat(3000)}`,
    ];
    for (const url of invalid) expectProblem(await create(url), 400, 'webhook_url_invalid');
    for (const body of [
      { url: 'http://127.0.0.1/x', events: [] },
      { url: 'http://127.0.0.1/x', events: ['grant.created'] },
      { url: 'http://127.0.0.1/x', events: ['approval.requested', 'approval.requested'] },
      { url: 'http://127.0.0.1/x' },
      { url: 'x'.repeat(5000), events: ['approval.requested'] },
      { url: 'http://127.0.0.1/\u0000', events: ['approval.requested'] },
      { url: 'http://127.0.0.1/x', events: ['approval.requested'], secret: 'mine' },
    ]) {
      expectProblem(await service.http.post(hooks()).set(world.owner.auth).send(body), 400, 'invalid_request');
    }
    expect(await service.deps.db('webhooks').where({ pod_id: world.podId })).toEqual([]);
  });
});

describe('deliveries', () => {
  afterEach(clearWebhooks);

  it('are signed as Standard Webhooks, carry the approval without its arguments and link to its console page', async () => {
    const receiver = await startReceiver([200]);
    try {
      const made = await create(receiver.url).expect(201);
      const secretArg = `arg-${Date.now()}`;
      const approvalId = await askApproval({ body: secretArg });
      const [requested] = await receiver.waitFor(1);
      const verified = new Webhook(made.body.secret).verify(requested!.body, requested!.headers as Record<string, string>) as {
        type: string;
        timestamp: string;
        data: { approval: Record<string, unknown>; consoleUrl: string };
      };
      expect(requested!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(requested!.headers['webhook-id']).toMatch(/^msg_/);
      expect(verified.type).toBe('approval.requested');
      expect(verified.data.consoleUrl).toBe(`${PUBLIC_URL}/console/approvals/${approvalId}`);
      expect(verified.data.approval).toMatchObject({ id: approvalId, state: 'pending', tool: 'issues.create_comment' });
      expect(verified.data.approval).not.toHaveProperty('args');
      expect(requested!.body).not.toContain(secretArg);
      // Another secret does not verify it: the signature is over this body with this secret.
      const other = await create(receiver.url).expect(201);
      expect(() => new Webhook(other.body.secret).verify(requested!.body, requested!.headers as Record<string, string>)).toThrow();
      await service.deps.db('webhooks').where({ id: other.body.id }).delete();

      await service.http.post(`/api/approvals/${approvalId}/approve`).set(world.owner.auth).send({ note: 'fine' }).expect(200);
      const [, decided] = await receiver.waitFor(2);
      const body = new Webhook(made.body.secret).verify(decided!.body, decided!.headers as Record<string, string>) as {
        type: string;
        data: { approval: Record<string, unknown> };
      };
      expect(body).toMatchObject({ type: 'approval.decided', data: { approval: { id: approvalId, state: 'approved', note: 'fine' } } });
      expect(JSON.stringify(service.logs)).not.toContain(made.body.secret);
    } finally {
      await receiver.close();
    }
  });

  it('a receiver that answers 500 gets the same message again after the backoff, by the service clock', async () => {
    const receiver = await startReceiver([500, 200]);
    try {
      const made = await create(receiver.url, world.owner, ['approval.requested']).expect(201);
      await askApproval({ body: 'retry me' });
      const [first] = await receiver.waitFor(1);
      const messageId = first!.headers['webhook-id'] as string;
      const pending = async () => service.deps.db('webhook_deliveries').where({ id: messageId }).first();
      await waitUntil(async () => (await pending()).last_status === 500);
      const failed = await pending();
      expect(failed).toMatchObject({ attempts: 1, delivered_at: null, failed_at: null });
      expect(failed.next_attempt_at.getTime()).toBe(clock.now() + 5_000);

      // Not before its time: the dispatcher looks every second, the clock has not moved.
      await sleep(1_500);
      expect(receiver.received).toHaveLength(1);
      clock.advance(5_000);
      const [, second] = await receiver.waitFor(2);
      expect(second!.headers['webhook-id']).toBe(messageId);
      expect(() => new Webhook(made.body.secret).verify(second!.body, second!.headers as Record<string, string>)).not.toThrow();
      await waitUntil(async () => (await pending()).delivered_at !== null);
      expect(await pending()).toMatchObject({ attempts: 2, last_status: 200, failed_at: null });
    } finally {
      await receiver.close();
    }
  });
});

describe('giving up', () => {
  afterEach(clearWebhooks);

  it('a receiver that keeps failing is given up 24 h after the message was written; a deleted webhook drops what waits', async () => {
    const receiver = await startReceiver([503]);
    try {
      await create(receiver.url, world.owner, ['approval.requested']).expect(201);
      const doomed = await create(receiver.url, world.owner, ['approval.requested']).expect(201);
      await askApproval({ body: 'never delivered' });
      await receiver.waitFor(2);
      const rows = () => service.deps.db('webhook_deliveries').whereIn('webhook_id', [doomed.body.id]);
      const [kept] = await service.deps
        .db('webhook_deliveries')
        .whereNot({ webhook_id: doomed.body.id })
        .whereIn('webhook_id', service.deps.db('webhooks').select('id').where({ pod_id: world.podId }));
      await service.http.delete(`${hooks()}/${doomed.body.id}`).set(world.owner.auth).expect(204);
      expect(await rows()).toEqual([]);

      const delivery = () => service.deps.db('webhook_deliveries').where({ id: kept.id }).first();
      await waitUntil(async () => (await delivery()).last_status === 503);
      const moved = 24 * 60 * 60_000 - 1_000;
      clock.advance(moved);
      try {
        await receiver.waitFor(3);
        await waitUntil(async () => (await delivery()).failed_at !== null);
        expect(await delivery()).toMatchObject({ attempts: 2, delivered_at: null, last_status: 503 });
        await sleep(1_200);
        expect(receiver.received).toHaveLength(3);
      } finally {
        clock.advance(-moved);
      }
    } finally {
      await receiver.close();
    }
  });
});

async function waitUntil(condition: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(50);
  }
}
