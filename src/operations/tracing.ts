import type { IncomingHttpHeaders, RequestListener } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer as OtelTracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { NO_TRACING, type Tracer } from '../kernel/trace';

/** The instrumentation scope of the service's spans. */
export const TRACER_NAME = 'grant-broker';

/**
 * Whether traces are exported: OpenTelemetry's own variables decide (OTEL_TRACES_EXPORTER, unless
 * `none`, or an OTLP endpoint); the exporter reads the rest of them (headers, protocol, timeout).
 */
export interface TracingSettings {
  OTEL_TRACES_EXPORTER?: string;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
}

export function exportsTraces(env: TracingSettings): boolean {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter === 'none') return false;
  return Boolean(exporter || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export interface Tracing {
  tracer: Tracer;
  /** The request listener run inside the W3C trace context of the request's `traceparent` header. */
  inbound(listener: RequestListener): RequestListener;
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry tracing of the broker check: one span per check and one per stage of it, their
 * parent taken from the request's `traceparent`. Spans go to `processors` (the stage table of
 * TRACE_STAGES is one: ./stage-timings.ts) and, when configured, to an OTLP collector in batches
 * off the request's path. Undefined when nothing would read a span: the check then runs bare.
 */
export function createTracing(options: {
  env: TracingSettings;
  processors?: SpanProcessor[];
  exporter?: SpanExporter;
}): Tracing | undefined {
  const processors = [...(options.processors ?? [])];
  // An exporter handed in (a test's, in memory) gets each span as it ends.
  if (options.exporter) processors.push(new SimpleSpanProcessor(options.exporter));
  else if (exportsTraces(options.env)) processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  if (processors.length === 0) return undefined;
  const provider = new NodeTracerProvider({ spanProcessors: processors });
  const exporting = processors.length > (options.processors?.length ?? 0);
  // Spans that leave the process need their parents: the W3C trace context propagator and an
  // AsyncLocalStorage context (a stage's span its check's child). That context costs every promise
  // of the process something on Node 20, so the stage table alone, which needs only each span's
  // duration, goes without it.
  if (exporting) provider.register();
  const tracer = spanTracer(provider.getTracer(TRACER_NAME));
  return {
    tracer,
    inbound: (listener) => (req, res) =>
      context.with(propagation.extract(ROOT_CONTEXT, req.headers as IncomingHttpHeaders), () => listener(req, res)),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * The kernel's Tracer as OpenTelemetry spans: `check` is `broker.check`, each stage
 * `broker.check.<stage>`. A failed stage's span has status ERROR with the error's class only
 * (a message could carry what a span must never hold).
 */
export function spanTracer(tracer: OtelTracer, parent?: Context): Tracer {
  return {
    span(name, work, attributes?: Attributes) {
      const run = (span: Span) => {
        const failed = (error: unknown) => {
          span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
          span.end();
        };
        let result;
        try {
          // A stage that takes no tracer of its own (none within it) gets none made.
          result = work(work.length === 0 ? NO_TRACING : spanTracer(tracer, trace.setSpan(parent ?? context.active(), span)));
        } catch (error) {
          failed(error);
          throw error;
        }
        if (!(result instanceof Promise)) {
          span.end();
          return result;
        }
        return result.then(
          (value: unknown) => {
            span.end();
            return value;
          },
          (error: unknown) => {
            failed(error);
            throw error;
          },
        ) as typeof result;
      };
      const spanName = name === 'check' ? 'broker.check' : `broker.check.${name}`;
      return parent ? tracer.startActiveSpan(spanName, { attributes }, parent, run) : tracer.startActiveSpan(spanName, { attributes }, run);
    },
  };
}
