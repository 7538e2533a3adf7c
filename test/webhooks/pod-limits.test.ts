import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase, migrateToLatest } from '../../src/db/database';
import { POD_CONCURRENCY } from '../../src/webhooks/dispatcher';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { ownDatabase } from '../support/own-database';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';
import { startReceiver } from './receiver';

/**
 * One pod cannot starve the others of webhooks: a pod whose receiver never answers, after 200
 * approvals, holds only its own deliveries (at most POD_CONCURRENCY at once), and another pod's
 * message still arrives at once; and a pod has at most WEBHOOK_MAX_PER_POD webhooks, even when it
 * asks for many at once. On a database of its own, with delivery on and the real clock, so that no
 * other test file's messages are sent from here.
 */
const database = ownDatabase('webhook_limits');
let service: TestService;

beforeAll(async () => {
  await database.fresh();
  const db = createDatabase(database.url, 1);
  await migrateToLatest(db);
  await db.destroy();
  service = await startService({
    DATABASE_URL: database.url,
    WEBHOOK_DELIVERY: 'true',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_MAX_PER_POD: '10',
  });
});
afterAll(async () => {
  await service?.close();
  await database.drop();
});

/** A receiver that reads each request and never answers; it counts how many it holds at once. */
async function startSilentReceiver() {
  const held = new Set<ServerResponse>();
  let mostHeld = 0;
  let received = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    received += 1;
    held.add(res);
    mostHeld = Math.max(mostHeld, held.size);
    res.on('close', () => held.delete(res));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/never`,
    stats: () => ({ received, mostHeld }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** How many webhook messages are queued once `expected` are, or `withinMs` has passed. */
async function queuedDeliveries(expected: number, withinMs: number): Promise<number> {
  const until = Date.now() + withinMs;
  for (;;) {
    const { n } = (await service.deps.db('webhook_deliveries').count({ n: '*' }).first()) as { n: string };
    if (Number(n) >= expected || Date.now() > until) return Number(n);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function approvalGrant(world: BrokerWorld) {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    { tools: ['issues.create_comment'], writeMode: 'approve', budget: { calls: 10_000, windowMs: 3_600_000 } },
  );
  return grant.id;
}

async function askApproval(world: BrokerWorld, grantId: string, body: string) {
  const res = await checkAs(service, world, grantId, world.agent, { tool: 'issues.create_comment', args: { body } });
  expect(res.body.decision).toBe('approval_required');
}

describe('a pod whose receiver never answers', () => {
  it("holds its own deliveries only: after its 200 approvals, another pod's message arrives in under 2 s", async () => {
    const silent = await startSilentReceiver();
    const receiver = await startReceiver([200]);
    try {
      const flooding = await brokerWorld(service);
      await service.http
        .post(`/api/pods/${flooding.podId}/webhooks`)
        .set(flooding.owner.auth)
        .send({ url: silent.url, events: ['approval.requested'] })
        .expect(201);
      const floodGrant = await approvalGrant(flooding);
      for (let batch = 0; batch < 20; batch += 1) {
        await Promise.all(Array.from({ length: 10 }, (_, i) => askApproval(flooding, floodGrant, `flood ${batch * 10 + i}`)));
      }
      // The approvals' outbox holds the 200 messages; the dispatcher queues them for the pod's webhook.
      expect(await queuedDeliveries(200, 30_000)).toBe(200);

      const other = await brokerWorld(service);
      await service.http
        .post(`/api/pods/${other.podId}/webhooks`)
        .set(other.owner.auth)
        .send({ url: receiver.url, events: ['approval.requested'] })
        .expect(201);
      const otherGrant = await approvalGrant(other);
      const asked = Date.now();
      await askApproval(other, otherGrant, 'an ordinary request');
      const [delivered] = await receiver.waitFor(1, 2_000);
      expect(Date.now() - asked).toBeLessThan(2_000);
      expect(JSON.parse(delivered!.body)).toMatchObject({
        type: 'approval.requested',
        data: { approval: { grantId: otherGrant, state: 'pending' } },
      });

      // The flooding pod's receiver was reached, and never held more than its pod's share.
      expect(silent.stats().received).toBeGreaterThan(0);
      expect(silent.stats().mostHeld).toBeLessThanOrEqual(POD_CONCURRENCY);
    } finally {
      await silent.close();
      await receiver.close();
    }
  });
});

describe('webhooks per pod', () => {
  it('are capped at WEBHOOK_MAX_PER_POD: the next is a 422 problem document, however many are asked for at once', async () => {
    const world = await brokerWorld(service);
    const create = (i: number) =>
      service.http
        .post(`/api/pods/${world.podId}/webhooks`)
        .set(world.owner.auth)
        .send({ url: `http://127.0.0.1:9/hook-${i}`, events: ['approval.requested'] });
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => create(i)));
    expect(answers.filter((res) => res.status === 201).length).toBe(10);
    const refused = answers.filter((res) => res.status !== 201);
    expect(refused.length).toBe(15);
    for (const res of refused) expectProblem(res, 422, 'too_many_webhooks');
    expect(await service.deps.db('webhooks').where({ pod_id: world.podId }).count({ n: '*' }).first()).toEqual({ n: '10' });

    // One deleted makes room for one.
    const listed = await service.http.get(`/api/pods/${world.podId}/webhooks`).set(world.owner.auth).expect(200);
    await service.http.delete(`/api/pods/${world.podId}/webhooks/${listed.body.items[0].id}`).set(world.owner.auth).expect(204);
    await create(100).expect(201);
    expectProblem(await create(101), 422, 'too_many_webhooks');

    // Another pod is not affected by this one being full.
    const other = await brokerWorld(service);
    await service.http
      .post(`/api/pods/${other.podId}/webhooks`)
      .set(other.owner.auth)
      .send({ url: 'http://127.0.0.1:9/hook', events: ['approval.requested'] })
      .expect(201);
  });

  it('says so in the OpenAPI document', async () => {
    const document = (await service.http.get('/api/openapi.json').expect(200)).body;
    const operation = document.paths['/api/pods/{podId}/webhooks'].post;
    expect(JSON.stringify(operation.responses['422'])).toContain('too_many_webhooks');
    expect(operation.description).toContain('WEBHOOK_MAX_PER_POD');
  });
});
