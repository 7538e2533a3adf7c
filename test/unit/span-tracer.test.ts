import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { createTracing } from '../../src/operations/tracing';

/**
 * The stage table's tracing (TRACE_STAGES, nothing exported): no async context is registered, so a
 * stage's span names its check as its parent only through the tracer the check hands it. Two
 * checks interleaved across awaits must not take each other's stages.
 */
it("makes each stage's span a child of its own check across awaits, with no async context registered", async () => {
  const exporter = new InMemorySpanExporter();
  const tracing = createTracing({ env: {}, processors: [new SimpleSpanProcessor(exporter)] })!;
  const turn = () => new Promise<void>((done) => setImmediate(done));
  const check = () =>
    tracing.tracer.span('check', async (stages) => {
      await turn();
      await stages.span('charge', turn);
      stages.span('decide', () => 'allow');
    });
  await Promise.all([check(), check()]);

  const spans = exporter.getFinishedSpans();
  const checks = spans.filter((span) => span.name === 'broker.check');
  expect(checks).toHaveLength(2);
  for (const parent of checks) {
    const children = spans.filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId).map((span) => span.name);
    expect(children.sort()).toEqual(['broker.check.charge', 'broker.check.decide']);
  }
  await tracing.shutdown();
});
