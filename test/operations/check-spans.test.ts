import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { startService, type TestService } from '../support/service';
import { brokerWorld, chainOf, type BrokerWorld } from '../support/broker-world';

/**
 * The broker check as OpenTelemetry spans, read by the SDK's own in-memory exporter: one span per
 * check and per stage, children of the caller's W3C `traceparent`, named by the grant tool, and
 * never holding an argument or a token.
 */
const exporter = new InMemorySpanExporter();
let service: TestService;
let world: BrokerWorld;
beforeAll(async () => {
  service = await startService({}, { spanExporter: exporter });
  world = await brokerWorld(service);
});
afterAll(() => service.close());

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const SECRET_ARG = 'SENTINEL-ARGUMENT-7731';

it("spans the check and each stage under the caller's trace, with the tool's name and nothing secret", async () => {
  const { leafId } = await chainOf(service, world, 1);
  exporter.reset();
  const res = await service.http
    .post('/api/broker/check')
    .set(world.broker.auth)
    .set('traceparent', `00-${TRACE_ID}-${PARENT_ID}-01`)
    .send({ grantId: leafId, tool: 'repos.read_file', subjectToken: world.agent.token, args: { path: 'README.md', note: SECRET_ARG } });
  expect(res.body.decision).toBe('allow');

  const spans = exporter.getFinishedSpans();
  const check = spans.find((span) => span.name === 'broker.check')!;
  expect(check).toBeDefined();
  expect(check.spanContext().traceId).toBe(TRACE_ID);
  expect(check.parentSpanContext?.spanId).toBe(PARENT_ID);
  expect(check.attributes).toMatchObject({ 'gen_ai.tool.name': 'repos.read_file', 'grant_broker.grant.id': leafId });
  const stages = spans.filter((span) => span.parentSpanContext?.spanId === check.spanContext().spanId).map((span) => span.name);
  expect(stages).toEqual(
    expect.arrayContaining(['broker.check.resolve', 'broker.check.decide', 'broker.check.charge', 'broker.check.settle']),
  );
  for (const span of spans) expect(span.spanContext().traceId).toBe(TRACE_ID);

  const everything = JSON.stringify(
    spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status, links: span.links })),
  );
  for (const secret of [SECRET_ARG, 'README.md', world.agent.token, world.broker.token]) expect(everything).not.toContain(secret);
});

it('starts a trace of its own without a traceparent, and marks a check that failed', async () => {
  exporter.reset();
  const res = await service.http
    .post('/api/broker/check')
    .set(world.broker.auth)
    .send({ grantId: 'grt_01jd0000000000000000000000', tool: 'repos.read_file', subjectToken: world.agent.token, args: {} });
  expect(res.status).toBe(404);
  const check = exporter.getFinishedSpans().find((span) => span.name === 'broker.check')!;
  expect(check.parentSpanContext).toBeUndefined();
  expect(check.status).toMatchObject({ code: 2 });
  expect(JSON.stringify(check.status)).not.toContain(world.agent.token);
});
