// bench:gateway's stage breakdown (BENCH_GATEWAY_STAGES=1): the gateway's own spans of each call
// (gateway/src/tracing.ts: `tools/call <tool>`, its `grant-broker check` and its `upstream
// tools/call <tool>`), received here over OTLP/HTTP as JSON, the way a collector would take them,
// and read as stages: before the check (argument validation, the tool's lookup), the check (sent →
// answered), between (the check's answer → the upstream's call sent), the upstream call, after
// (the outcome queued, the result handed back). What is outside the handler (the HTTP request read,
// the token, the answer written, the client's own SDK) is the path's latency less the handler's.
import { createServer } from 'node:http';
import { freePort, percentile } from './bench-harness.mjs';

/** A receiver of OTLP/HTTP JSON spans; `env` points a gateway's exporter at it. */
export async function startStageCollector() {
  const port = await freePort();
  let spans = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const sent = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resource of sent.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) for (const span of scope.spans ?? []) spans.push(span);
      } catch {
        // Not JSON (another protocol): nothing to read.
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    env: {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      // Sent often, in small batches: the exporter's own work spread out rather than in bursts.
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
    /** The spans received since the last call, forgotten here. */
    take() {
      const taken = spans;
      spans = [];
      return taken;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const ms = (nanos) => Number(BigInt(nanos) / 1000n) / 1000;

/** Each call's stages (ms) from its spans. */
export function stagesOf(spans) {
  const byTrace = new Map();
  for (const span of spans) {
    const trace = byTrace.get(span.traceId) ?? {};
    if (span.name.startsWith('tools/call ')) trace.call = span;
    else if (span.name === 'grant-broker check') trace.check = span;
    else if (span.name.startsWith('upstream tools/call ')) trace.upstream = span;
    byTrace.set(span.traceId, trace);
  }
  const stages = { handler: [], 'before the check': [], check: [], 'check → upstream sent': [], upstream: [], 'after the upstream': [] };
  for (const { call, check, upstream } of byTrace.values()) {
    if (!call || !check || !upstream) continue;
    const [c0, c1, k0, k1, u0, u1] = [call.startTimeUnixNano, call.endTimeUnixNano, check.startTimeUnixNano, check.endTimeUnixNano]
      .concat([upstream.startTimeUnixNano, upstream.endTimeUnixNano])
      .map(ms);
    stages.handler.push(c1 - c0);
    stages['before the check'].push(k0 - c0);
    stages.check.push(k1 - k0);
    stages['check → upstream sent'].push(u0 - k1);
    stages.upstream.push(u1 - u0);
    stages['after the upstream'].push(c1 - u1);
  }
  return stages;
}

/** The stages as table rows: p50, p90, p99 of each, and the part of the path's latency outside the handler. */
export function stageRows(stages, pathLatencies) {
  const row = (name, values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (p) => (sorted.length ? `${percentile(sorted, p).toFixed(2)} ms` : '-');
    return `| ${name} | ${sorted.length} | ${at(50)} | ${at(90)} | ${at(99)} |`;
  };
  const lines = ['| stage (gateway spans) | calls | p50 | p90 | p99 |', '| --- | --- | --- | --- | --- |'];
  for (const [name, values] of Object.entries(stages)) lines.push(row(name, values));
  const sorted = (values) => [...values].sort((a, b) => a - b);
  const [through, handler] = [sorted(pathLatencies), sorted(stages.handler)];
  if (through.length && handler.length) {
    const outside = (p) => `${(percentile(through, p) - percentile(handler, p)).toFixed(2)} ms`;
    lines.push(`| outside the handler (path − handler, at each percentile) | | ${outside(50)} | ${outside(90)} | ${outside(99)} |`);
  }
  return lines.join('\n');
}
