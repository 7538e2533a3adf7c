import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { rootGrant } from '../support/world';
import { newId } from '../../src/kernel/ids';
import { isPublicAddress } from '../../src/outbound/address-guard';
import { DELIVERY_WINDOW_MS, nextAttemptAt } from '../../src/webhooks/dispatcher';
import { mintSecret, sealSecret } from '../../src/webhooks/secrets';
import { sendWebhook } from '../../src/webhooks/send';
import { startReceiver } from './receiver';

/**
 * Without WEBHOOK_ALLOW_PRIVATE a webhook never reaches loopback, private, link-local or
 * otherwise non-public addresses: refused at creation (400), and refused again at delivery, on the
 * address the name resolves to then (a name that resolved elsewhere at creation: DNS rebinding).
 * A delivery reads a bounded answer for a bounded time.
 */
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(async () => {
  await service.close();
});

const create = (url: string) =>
  service.http
    .post(`/api/pods/${world.podId}/webhooks`)
    .set(world.owner.auth)
    .send({ url, events: ['approval.requested'] });

describe('at creation', () => {
  it('refuses every non-public target with 400 webhook_target_not_allowed', async () => {
    const refused = [
      'http://127.0.0.1/hook',
      'http://127.1.2.3:8080/hook',
      'http://localhost/hook',
      'http://10.0.0.5/hook',
      'http://172.16.0.1/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      'http://0.0.0.0/hook',
      'http://[::1]/hook',
      'http://[::]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[::ffff:a9fe:a9fe]/hook',
      'http://[fe80::1]/hook',
      'http://[fd00::1]/hook',
      'http://[64:ff9b::7f00:1]/hook',
      'http://[2002:7f00:1::]/hook',
      'http://2130706433/hook',
      'http://0x7f.1/hook',
      'https://224.0.0.1/hook',
    ];
    for (const url of refused) {
      const res = await create(url);
      expect({ url, status: res.status, code: res.body.code }).toEqual({ url, status: 400, code: 'webhook_target_not_allowed' });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(await service.deps.db('webhooks').where({ pod_id: world.podId })).toEqual([]);
  });

  // The deprecated IPv4-compatible IPv6 range (::/96): WHATWG URLs normalise `[::127.0.0.1]` to
  // `[::7f00:1]`, which ipaddr.js alone calls unicast. Each is judged as the IPv4 it carries.
  const ipv4Compatible = [
    'http://[::127.0.0.1]/hook',
    'http://[::7f00:1]/hook',
    'http://[0:0:0:0:0:0:7f00:1]:8080/hook',
    'http://[::169.254.169.254]/latest/meta-data/',
    'http://[::a9fe:a9fe]/latest/meta-data/',
    'http://[::10.0.0.1]/hook',
    'http://[::a00:1]/hook',
    'http://[::172.16.0.1]/hook',
    'http://[::192.168.1.1]/hook',
    'http://[::100.64.0.1]/hook',
    'http://[::0.0.0.0]/hook',
    'http://[::0.0.0.1]/hook',
    'https://[::224.0.0.1]/hook',
    'http://[::ffff:0:7f00:1]/hook',
  ];

  it('refuses every IPv4-compatible IPv6 spelling of a non-public address (::/96)', async () => {
    for (const url of ipv4Compatible) {
      const res = await create(url);
      expect({ url, status: res.status, code: res.body.code }).toEqual({ url, status: 400, code: 'webhook_target_not_allowed' });
    }
    expect(await service.deps.db('webhooks').where({ pod_id: world.podId })).toEqual([]);
  });

  it('judges an IPv4-compatible address as the IPv4 it carries', () => {
    for (const address of [
      '::7f00:1',
      '::127.0.0.1',
      '::a9fe:a9fe',
      '::169.254.169.254',
      '::a00:1',
      '::10.0.0.1',
      '::c0a8:101',
      '::6440:1',
    ]) {
      expect({ address, public: isPublicAddress(address) }).toEqual({ address, public: false });
    }
    // A public IPv4 carried so is judged public, like the same IPv4 mapped (::ffff:8.8.8.8).
    expect(isPublicAddress('::808:808')).toBe(true);
    expect(isPublicAddress('::8.8.8.8')).toBe(true);
  });

  it('judges addresses as public unicast only', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(address)).toBe(true);
    for (const address of ['127.0.0.1', '::ffff:10.0.0.1', 'fe80::1', '192.0.2.1', '255.255.255.255', 'not-an-ip', '']) {
      expect(isPublicAddress(address)).toBe(false);
    }
  });
});

describe('at delivery', () => {
  it('refuses a target that resolves to a private address now, whatever it resolved to before', async () => {
    const receiver = await startReceiver([200]);
    try {
      // Kept as if they had passed at creation (a public answer then, a rebinding now).
      const targets = [`http://localhost:${receiver.port}/hook`, receiver.url, `http://[::ffff:127.0.0.1]:${receiver.port}/hook`];
      const ids: string[] = [];
      for (const url of targets) {
        const id = newId('webhook');
        ids.push(id);
        await service.deps.db('webhooks').insert({
          id,
          pod_id: world.podId,
          url,
          events: ['approval.requested'],
          ...sealSecret(service.deps.keyRing, id, mintSecret()),
          created_by: world.owner.userId,
          created_at: new Date(),
        });
      }
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
      const asked = await checkAs(service, world, grant.id, world.agent, { tool: 'issues.create_comment', args: { body: 'x' } });
      expect(asked.body.decision).toBe('approval_required');
      // A pass queues the approvals' outbox and takes at most POD_CONCURRENCY of one pod's messages
      // (and whatever else of the shared test database is due): pass until each of these was tried.
      const deliveriesOfTargets = () => service.deps.db('webhook_deliveries').whereIn('webhook_id', ids);
      for (let pass = 0; pass < 10; pass += 1) {
        await service.deps.webhookDispatcher.deliverDue();
        const tried = (await deliveriesOfTargets()).filter((delivery) => delivery.attempts > 0);
        if (tried.length === targets.length) break;
      }
      expect(receiver.received).toEqual([]);
      const deliveries = await deliveriesOfTargets();
      expect(deliveries).toHaveLength(targets.length);
      for (const delivery of deliveries) {
        expect(delivery).toMatchObject({ attempts: 1, delivered_at: null, failed_at: null, last_status: null });
        expect(delivery.last_error).toMatch(/is not a public unicast address/);
      }
    } finally {
      await receiver.close();
      await service.deps.db('webhooks').where({ pod_id: world.podId }).delete();
    }
  });
});

describe('at delivery, in IPv4-compatible form', () => {
  it('refuses a kept target on [::7f00:1] and its other spellings without connecting', async () => {
    const receiver = await startReceiver([200]);
    try {
      const targets = [
        `http://[::7f00:1]:${receiver.port}/hook`,
        `http://[::127.0.0.1]:${receiver.port}/hook`,
        `http://[0:0:0:0:0:0:7f00:1]:${receiver.port}/hook`,
        `http://[::a9fe:a9fe]:${receiver.port}/latest/meta-data/`,
        `http://[::10.0.0.1]:${receiver.port}/hook`,
      ];
      for (const url of targets) {
        const result = await sendWebhook(
          { url, secret: mintSecret() },
          { id: 'msg_test', timestampMs: Date.now(), body: '{}' },
          {
            timeoutMs: 2_000,
            maxResponseBytes: 1024,
            allowPrivate: false,
          },
        );
        expect({ url, result }).toEqual({
          url,
          result: { ok: false, status: null, error: expect.stringMatching(/is not a public unicast address/) },
        });
      }
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe('one attempt is bounded', () => {
  const message = { id: 'msg_test', timestampMs: Date.now(), body: '{"type":"approval.requested"}' };
  const limits = { timeoutMs: 500, maxResponseBytes: 1024, allowPrivate: true };

  it('reads at most maxResponseBytes of an endless answer, and stops waiting at the timeout', async () => {
    let written = 0;
    const endless = createServer((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = () => {
        while (res.write(chunk)) written += chunk.length;
      };
      res.on('drain', pump);
      pump();
    });
    const silent = createServer(() => undefined);
    for (const server of [endless, silent]) {
      server.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
    }
    const url = (server: typeof endless) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const started = Date.now();
      expect(await sendWebhook({ url: url(endless), secret: mintSecret() }, message, limits)).toEqual({ ok: true, status: 200 });
      expect(Date.now() - started).toBeLessThan(400);
      expect(written).toBeLessThan(16 * 1024 * 1024);
      const waited = Date.now();
      expect(await sendWebhook({ url: url(silent), secret: mintSecret() }, message, limits)).toMatchObject({
        ok: false,
        status: null,
        error: 'no answer within 500 ms',
      });
      expect(Date.now() - waited).toBeLessThan(2_000);
    } finally {
      endless.closeAllConnections();
      silent.closeAllConnections();
      await Promise.all([endless, silent].map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });

  it('does not follow a redirect inward', async () => {
    const receiver = await startReceiver([200]);
    const redirect = createServer((_req, res) => res.writeHead(307, { location: receiver.url }).end());
    redirect.listen(0, '127.0.0.1');
    await new Promise((resolve) => redirect.once('listening', resolve));
    try {
      const result = await sendWebhook(
        { url: `http://127.0.0.1:${(redirect.address() as AddressInfo).port}/`, secret: mintSecret() },
        message,
        limits,
      );
      expect(result).toEqual({ ok: false, status: 307, error: 'answered 307' });
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
      await new Promise((resolve) => redirect.close(resolve));
    }
  });
});

describe('the backoff', () => {
  it('doubles from 5 s up to an hour, and gives up past 24 h after the message was written', () => {
    const written = 1_000_000;
    expect(nextAttemptAt(written, 1, written)).toBe(written + 5_000);
    expect(nextAttemptAt(written, 2, written + 5_000)).toBe(written + 15_000);
    expect(nextAttemptAt(written, 30, written + 60_000)).toBe(written + 60_000 + 3_600_000);
    expect(nextAttemptAt(written, 30, written + DELIVERY_WINDOW_MS - 3_600_000)).toBe(written + DELIVERY_WINDOW_MS);
    expect(nextAttemptAt(written, 30, written + DELIVERY_WINDOW_MS - 3_599_999)).toBeUndefined();
  });
});
