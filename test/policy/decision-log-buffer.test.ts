import { Writable } from 'node:stream';
import { createLogger } from '../../src/kernel/log';
import { metricsRegistry } from '../../src/kernel/metrics';
import { DecisionLog } from '../../src/policy/decision-log';
import { writeInputJson } from '../../src/policy/input-json';
import { closingCollector, decisionCollector, metricValue } from '../support/decision-collector';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith } from '../support/world';

/**
 * The decision-log upload buffer is bounded in bytes as well as in events: a collector down or
 * slower than the upload timeout, with checks whose resource path is 60 KB (as large as a check's
 * body allows), keeps the buffer under DECISION_LOG_BUFFER_BYTES, drops and counts the oldest, and
 * answers every check. No event carries more than the first KiB of a resource value.
 */
const BUFFER_BYTES = 256 * 1024;
const LONG_PATH = `src/${'a'.repeat(60_000)}.ts`;
const CHECKS = 300;

const metric = async (service: TestService, name: string) => metricValue((await service.http.get('/metrics')).text, name);

/** A grant on a tool whose pointers read the repository and path from args, and checks of it. */
async function checksOfPaths(service: TestService) {
  const owner = human(service, 'owner');
  const podId = await podWith(service, owner);
  const agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  const tools = [{ name: 'repos.read_file', access: 'read', resource: { repository: '/repository', path: '/path' } }];
  const connectionId = (await connection(service, owner, brk.id, { tools })).id;
  const grant = await service.http
    .post('/api/grants')
    .set(owner.auth)
    .send({ connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file'] })
    .expect(201);
  return (filePath: string) =>
    service.http
      .post('/api/broker/check')
      .set(brk.auth)
      .send({
        grantId: grant.body.id,
        tool: 'repos.read_file',
        subjectToken: agent.token,
        args: { repository: 'acme/api', path: filePath },
      });
}

/** `count` checks of LONG_PATH, ten at a time: each answer's status and how long it took. */
async function manyLongPathChecks(check: Awaited<ReturnType<typeof checksOfPaths>>, count: number) {
  const answers: Array<{ status: number; decision: string; ms: number }> = [];
  for (let done = 0; done < count; done += 10) {
    answers.push(
      ...(await Promise.all(
        Array.from({ length: 10 }, async () => {
          const started = Date.now();
          const res = await check(LONG_PATH);
          return { status: res.status, decision: res.body.decision as string, ms: Date.now() - started };
        }),
      )),
    );
  }
  return answers;
}

/**
 * A decision reached, whichever: a path past what the policy takes as canonical may be denied,
 * and a denial is logged as an allow is.
 */
const answered = (a: { status: number; decision: string }) => a.status === 200 && ['allow', 'deny'].includes(a.decision);

async function expectBoundedBuffer(service: TestService, droppedBefore: number) {
  await decisionsWritten();
  expect(await metric(service, 'decision_log_dropped_total')).toBeGreaterThan(droppedBefore);
  const bufferBytes = await metric(service, 'decision_log_buffer_bytes');
  expect(bufferBytes).toBeDefined();
  // Something waits (the collector takes nothing), and never more than the bound.
  expect(bufferBytes).toBeGreaterThan(0);
  expect(bufferBytes).toBeLessThanOrEqual(BUFFER_BYTES);
}

describe('a collector that is down', () => {
  it('keeps the unsent events under DECISION_LOG_BUFFER_BYTES, dropping and counting the oldest', async () => {
    const down = closingCollector();
    const service = await startService({
      DECISION_LOG_URL: await down.url(),
      DECISION_LOG_BUFFER_BYTES: String(BUFFER_BYTES),
      DECISION_LOG_FLUSH_MS: '20',
    });
    try {
      const check = await checksOfPaths(service);
      const droppedBefore = (await metric(service, 'decision_log_dropped_total')) ?? 0;
      const answers = await manyLongPathChecks(check, CHECKS);
      expect(answers.filter(answered)).toHaveLength(CHECKS);
      await expectBoundedBuffer(service, droppedBefore);
      // The service log carries each event too: with the path cut, not the 60 KB one.
      const events = service.logs.filter((line) => line.includes('"msg":"decision"') && line.includes('acme/api'));
      expect(events).toHaveLength(CHECKS);
      expect(events.every((line) => !line.includes(LONG_PATH.slice(0, 2000)))).toBe(true);
    } finally {
      await service.close();
      await down.close();
    }
  });
});

describe('a collector slower than the upload timeout', () => {
  it('holds the same bounds while an upload hangs, and every check is answered as fast', async () => {
    const slow = decisionCollector();
    slow.setHolding(true);
    const service = await startService({
      DECISION_LOG_URL: await slow.url(),
      DECISION_LOG_BUFFER_BYTES: String(BUFFER_BYTES),
      DECISION_LOG_FLUSH_MS: '20',
      DECISION_LOG_BATCH_EVENTS: '10',
    });
    try {
      const check = await checksOfPaths(service);
      const droppedBefore = (await metric(service, 'decision_log_dropped_total')) ?? 0;
      const answers = await manyLongPathChecks(check, CHECKS);
      expect(slow.held()).toBeGreaterThan(0);
      expect(answers.filter(answered)).toHaveLength(CHECKS);
      // The upload hangs for its whole 10 s timeout; a check that waited on it would take that long.
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(5000);
      await expectBoundedBuffer(service, droppedBefore);
    } finally {
      // Ends the hanging upload first, so the graceful shutdown's last try fails at once.
      await slow.close();
      await service.close();
    }
  });
});

describe('a collector that takes the events', () => {
  it('receives the resource path cut to its first KiB, marked and named in `masked`', async () => {
    const sink = decisionCollector<{ input: { resource?: { repository?: string; path?: string } }; masked?: string[] }>();
    const service = await startService({ DECISION_LOG_URL: await sink.url(), DECISION_LOG_FLUSH_MS: '20' });
    try {
      const check = await checksOfPaths(service);
      const res = await check(LONG_PATH);
      expect(answered({ status: res.status, decision: res.body.decision })).toBe(true);
      const checkEvents = () => sink.received.flatMap((batch) => batch.events).filter((e) => e.input.resource?.repository === 'acme/api');
      const until = Date.now() + 5000;
      while (checkEvents().length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 25));
      const events = checkEvents();
      expect(events).toHaveLength(1);
      const [event] = events;
      // The length first: a failure then reads as a number, not as 60 000 characters.
      expect(event!.input.resource!.path!.length).toBeLessThan(1100);
      expect(event!.input.resource!.path).toBe(`${LONG_PATH.slice(0, 1024)}**TRUNCATED**`);
      expect(event!.masked).toEqual(['/input/args', '/input/resource/path']);
      expect(sink.received.every((batch) => !batch.raw.includes(LONG_PATH.slice(0, 2000)))).toBe(true);
    } finally {
      await service.close();
      await sink.close();
    }
  });
});

describe('an event larger than 1 MiB after the cap', () => {
  it('is neither written nor buffered, and is counted as dropped', async () => {
    const lines: string[] = [];
    const log = createLogger(
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      }),
    );
    const down = closingCollector();
    const upload = {
      url: await down.url(),
      bufferEvents: 100,
      bufferBytes: 4 * 1024 * 1024,
      batchEvents: 100,
      flushMs: 600_000,
      timeoutMs: 1000,
    };
    const decisionLog = new DecisionLog({ mode: 'all', log, version: 'test', upload });
    const metrics = async (name: string) => metricValue(await metricsRegistry.metrics(), name) ?? 0;
    const droppedBefore = await metrics('decision_log_dropped_total');
    const bytesBefore = await metrics('decision_log_buffer_bytes');
    try {
      // Not a resource value: nothing cuts it, so the event as a whole is too large.
      const huge = writeInputJson({ tool: { name: 'x'.repeat(1_100_000) }, resource: {}, args: {} }, ['args'], '**REDACTED**');
      const small = writeInputJson({ tool: { name: 'repos.read_file' }, resource: {}, args: {} }, ['args'], '**REDACTED**');
      decisionLog.record('huge-decision', 'broker/check/decision', huge, { allow: true }, 'r1', 1);
      decisionLog.record('small-decision', 'broker/check/decision', small, { allow: true }, 'r1', 1);
      await decisionsWritten();
      const written = lines.filter((line) => line.includes('"msg":"decision"'));
      expect(written.map((line) => (JSON.parse(line) as { decision_id: string }).decision_id)).toEqual(['small-decision']);
      expect(lines.some((line) => line.includes('x'.repeat(2000)))).toBe(false);
      expect(await metrics('decision_log_dropped_total')).toBe(droppedBefore + 1);
      const buffered = (await metrics('decision_log_buffer_bytes')) - bytesBefore;
      expect(buffered).toBeGreaterThan(0);
      expect(buffered).toBeLessThan(4096);
    } finally {
      await decisionLog.close(100);
      await down.close();
    }
  });
});
