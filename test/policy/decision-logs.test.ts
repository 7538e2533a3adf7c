import { z } from 'zod';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { decisionCollector, metricValue } from '../support/decision-collector';
import { policyFromSources } from '../support/policy-sources';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { callRecord } from '../support/call-records';

/**
 * CONTRACT §11: decision events in OPA's format, uploaded in gzip batches to a collector that
 * speaks OPA's decision log API (a real HTTP server here), with the call's arguments masked; a
 * collector that fails is retried, a full buffer drops (and counts) the oldest, and graceful
 * shutdown flushes what is left.
 */
const OpaDecisionEvent = z.object({
  decision_id: z.string().uuid(),
  path: z.string(),
  input: z.record(z.string(), z.unknown()),
  result: z.unknown(),
  timestamp: z.iso.datetime({ offset: true }),
  bundles: z.record(z.string(), z.object({ revision: z.string() })),
  labels: z.object({ id: z.string(), version: z.string() }).catchall(z.string()),
  metrics: z.record(z.string(), z.number()),
  masked: z.array(z.string()).optional(),
  erased: z.array(z.string()).optional(),
});

const collector = () => decisionCollector<z.infer<typeof OpaDecisionEvent>>();

async function eventually(ok: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(ok()).toBe(true);
}

// Summed over its series: decision_log_dropped_total has one per reason.
const metric = async (service: TestService, name: string) => metricValue((await service.http.get('/metrics')).text, name) ?? 0;

describe('uploading decision events', () => {
  const sink = collector();
  let service: TestService;
  let world: BrokerWorld;

  beforeAll(async () => {
    service = await startService({ DECISION_LOG_URL: await sink.url(), DECISION_LOG_FLUSH_MS: '50', DECISION_LOG_BATCH_EVENTS: '5' });
    world = await brokerWorld(service);
  });
  afterAll(async () => {
    await service.close();
    await sink.close();
  });

  it('sends gzip batches of OPA events; the call record joins its decision; args never leave', async () => {
    const marker = `arg-secret-${process.pid}`;
    const { leafId } = await chainOf(service, world, 1);
    const res = await checkAs(service, world, leafId, world.agent, { args: { path: marker } });
    expect(res.body.decision).toBe('allow');
    const record = await callRecord(service.deps.db, res.body.callId);
    await eventually(() => sink.received.some((r) => r.events.some((e) => e.decision_id === record.decision_id)));

    for (const batch of sink.received) {
      expect(batch.encoding).toBe('gzip');
      expect(batch.contentType).toBe('application/json');
      for (const event of batch.events) expect(OpaDecisionEvent.safeParse(event).success).toBe(true);
      expect(batch.raw).not.toContain(marker);
    }
    const event = sink.received.flatMap((r) => r.events).find((e) => e.decision_id === record.decision_id)!;
    expect(event).toMatchObject({
      path: 'broker/check/decision',
      // Only args are masked: resource (here none, the tool declares no pointer) is what an audit and impact read.
      input: { args: '**REDACTED**', resource: {}, tool: { name: 'repos.read_file' } },
      masked: ['/input/args'],
      result: { allow: true, reason: 'allowed' },
    });
    expect(event.bundles.policy!.revision).toBe((await service.http.get('/readyz')).body.policyRevision);
    expect(service.logs.join('\n')).not.toContain(marker);
  });

  it('retries a collector that fails, and delivers once it is back', async () => {
    sink.setFailing(true);
    const failuresBefore = await metric(service, 'decision_log_upload_failures_total');
    const { leafId } = await chainOf(service, world, 0);
    const res = await checkAs(service, world, leafId, world.agent);
    const record = await callRecord(service.deps.db, res.body.callId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await metric(service, 'decision_log_upload_failures_total')).toBeGreaterThan(failuresBefore);
    sink.setFailing(false);
    await eventually(() => sink.received.some((r) => r.events.some((e) => e.decision_id === record.decision_id)), 8000);
  });
});

describe('a collector gone for long', () => {
  it('drops the oldest events past the buffer, counts them, and never slows a check', async () => {
    const sink = collector();
    sink.setFailing(true);
    const service = await startService({
      DECISION_LOG_URL: await sink.url(),
      DECISION_LOG_BUFFER_EVENTS: '100',
      DECISION_LOG_FLUSH_MS: '20',
    });
    try {
      const world = await brokerWorld(service);
      const { leafId } = await chainOf(service, world, 0);
      for (let i = 0; i < 12; i += 1) {
        const answers = await Promise.all(Array.from({ length: 10 }, () => checkAs(service, world, leafId, world.agent)));
        expect(answers.every((a) => a.status === 200)).toBe(true);
      }
      await decisionsWritten();
      expect(await metric(service, 'decision_log_dropped_total')).toBeGreaterThan(0);
    } finally {
      await service.close();
      await sink.close();
    }
  });

  it('flushes on graceful shutdown', async () => {
    const sink = collector();
    const service = await startService({ DECISION_LOG_URL: await sink.url(), DECISION_LOG_FLUSH_MS: '600000' });
    const world = await brokerWorld(service);
    const { leafId } = await chainOf(service, world, 0);
    const res = await checkAs(service, world, leafId, world.agent);
    const record = await callRecord(service.deps.db, res.body.callId);
    expect(sink.received).toHaveLength(0);
    await service.close();
    expect(sink.received.flatMap((r) => r.events).map((e) => e.decision_id)).toContain(record.decision_id);
    await sink.close();
  });
});

describe("the policy's own mask rules (system.log.mask)", () => {
  let service: TestService;

  beforeAll(async () => {
    const masked = policyFromSources('masked', {
      files: {
        'system/log.rego': [
          'package system.log',
          '',
          '# Who asked to read a pod is nobody else’s business; the owner of a connection is replaced.',
          'mask contains "/input/caller" if input.path == "pods/access/decision"',
          '',
          'mask contains {"op": "upsert", "path": "/input/connection/owner_id", "value": "**owner**"} if {',
          '\tinput.path == "grants/create/decision"',
          '}',
          '',
        ].join('\n'),
      },
    });
    service = await startService({ POLICY_WASM_PATH: `${masked}.wasm`, DECISION_LOG: 'all' });
  }, 60_000);
  afterAll(async () => {
    await service.close();
  });

  it('erases and replaces what the rules name, as OPA does, on top of the built-in args mask', async () => {
    const world = await brokerWorld(service);
    await chainOf(service, world, 0);
    await service.http.get(`/api/pods/${world.podId}`).set(world.owner.auth).expect(200);
    await decisionsWritten();
    const events = service.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'decision');
    const podRead = events.find((e) => e.path === 'pods/access/decision');
    expect(podRead.erased).toEqual(['/input/caller']);
    expect(podRead.input.caller).toBeUndefined();
    const created = events.find((e) => e.path === 'grants/create/decision');
    expect(created.masked).toEqual(['/input/connection/owner_id']);
    expect(created.input.connection.owner_id).toBe('**owner**');
  });
});
