import type { IncomingHttpHeaders } from 'node:http';
import {
  context,
  propagation,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

const tracer = trace.getTracer('mcp-gateway');
/**
 * A span's start to the microsecond: left to the SDK it is the wall clock's millisecond, which
 * hides the gaps between one call's stages (its durations are precise either way).
 */
const now = () => performance.timeOrigin + performance.now();

/**
 * Whether any tracer provider is registered (ours, or the program's that embeds the gateway).
 * With none, the API's no-op spans still cost a context, a span object and a closure per stage of
 * every call: a call then runs its work without them.
 */
function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer('mcp-gateway') !== undefined;
}

/**
 * OpenTelemetry for the gateway, on when OpenTelemetry's own variables ask for an exporter
 * (OTEL_TRACES_EXPORTER other than `none`, or an OTLP endpoint): spans go to the collector in
 * batches off the call's path. Off, the API's no-op tracer makes no span at all. Answers the
 * shutdown that sends what is left.
 */
export function startTracing(env: NodeJS.ProcessEnv): () => Promise<void> {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  const on = exporter !== 'none' && Boolean(exporter || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (!on) return async () => undefined;
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  provider.register();
  return () => provider.shutdown();
}

/**
 * Where an MCP request's trace continues: the W3C trace context its `_meta` carries (`traceparent`,
 * `tracestate`, as MCP hosts put it there), else its HTTP request's headers.
 */
export function callerContext(meta: Record<string, unknown> | undefined, headers: IncomingHttpHeaders | undefined): Context {
  const carrier: Record<string, string> = {};
  for (const source of [headers ?? {}, meta ?? {}] as Record<string, unknown>[]) {
    for (const name of ['traceparent', 'tracestate']) if (typeof source[name] === 'string') carrier[name] = source[name];
  }
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * One MCP request as a span (`<method> <tool>`, the MCP and GenAI conventions' names), the grant
 * broker's check inside it carrying its trace on. `describe` names how the result went (a refusal's
 * reason); never an argument or a token.
 */
export function inSpan<T>(
  name: string,
  parent: Context,
  attributes: Attributes,
  work: () => Promise<T>,
  describe?: (result: T) => string | undefined,
): Promise<T> {
  if (!tracing()) return work();
  return tracer.startActiveSpan(name, { kind: SpanKind.SERVER, attributes, startTime: now() }, parent, async (span) => {
    try {
      const result = await work();
      const failure = describe?.(result);
      if (failure) {
        span.setAttribute('error.type', failure);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return result;
    } catch (error) {
      span.setAttribute('error.type', error instanceof Error ? error.name : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end(now());
    }
  });
}

/** The active trace context as W3C headers on a request to the grant broker (nothing when tracing is off). */
export function injectTraceContext(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

/**
 * A stage of the active call as a child span (the grant broker's check, the upstream's call), so
 * that where a call's time goes reads off its trace. `work` is handed `done`, which ends the stage
 * where it really ends (the check ends where the upstream's call begins, inside `withCheck`); it
 * ends when `work` settles otherwise. Not made the active span: the check's trace context stays the
 * call's own, as the service's spans expect.
 */
export function inStage<T>(name: string, attributes: Attributes, work: (done: () => void) => Promise<T>): Promise<T> {
  if (!tracing()) return work(() => undefined);
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes, startTime: now() });
  let ended = false;
  const done = () => {
    if (ended) return;
    ended = true;
    span.end(now());
  };
  return work(done).finally(done);
}
