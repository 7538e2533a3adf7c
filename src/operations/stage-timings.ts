import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * TRACE_STAGES=on (the bench): the check's OpenTelemetry spans (./tracing.ts) read as a table of
 * each stage's wall-clock time, with the event loop's delay and the process's GC pauses beside
 * them, written to stderr when the process exits. The times are the spans' own: no second timer.
 * SIGUSR2 starts the table over (the bench sends it after its warm-up).
 */
export function createStageTimings(): SpanProcessor {
  const samples = new Map<string, number[]>();
  const record = (name: string, ms: number) => (samples.get(name) ?? samples.set(name, []).get(name)!).push(ms);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      record(
        (entry as unknown as { detail?: { kind?: number } }).detail?.kind === 1 ? 'GC pause: scavenge' : 'GC pause: other',
        entry.duration,
      );
    }
  }).observe({ entryTypes: ['gc'] });
  process.on('SIGUSR2', () => {
    samples.clear();
    loop.reset();
  });
  process.on('exit', () => process.stderr.write(table(samples, loop)));
  return {
    onStart: () => undefined,
    onEnd(span: ReadableSpan) {
      const [seconds, nanos] = span.duration;
      record(span.name === 'broker.check' ? 'check' : span.name.replace(/^broker\.check\./, ''), seconds * 1e3 + nanos / 1e6);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

function table(samples: Map<string, number[]>, loop: ReturnType<typeof monitorEventLoopDelay>): string {
  const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const cells = (values: number[]) => values.map((v) => v.toFixed(2).padStart(8)).join('');
  const rows = [...samples].map(([name, values]) => {
    const sorted = values.slice().sort((a, b) => a - b);
    const mean = sorted.reduce((sum, v) => sum + v, 0) / sorted.length;
    return `${name.padEnd(32)} ${String(sorted.length).padStart(7)}${cells([mean, quantile(sorted, 0.5), quantile(sorted, 0.9), quantile(sorted, 0.99)])}`;
  });
  const ns = (value: number) => value / 1e6;
  return [
    `\nwhere a check's time goes (ms, wall clock)`,
    `${'stage'.padEnd(32)} ${'count'.padStart(7)}${['mean', 'p50', 'p90', 'p99'].map((h) => h.padStart(8)).join('')}`,
    ...rows,
    `${'event loop delay'.padEnd(32)} ${'-'.padStart(7)}${cells([loop.mean, loop.percentile(50), loop.percentile(90), loop.percentile(99)].map(ns))}`,
    '',
  ].join('\n');
}
