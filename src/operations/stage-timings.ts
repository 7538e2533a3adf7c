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
  // Each check's stages (a stage run twice, summed) by the check's span id until the check ends, then the check whole.
  const open = new Map<string, Map<string, number>>();
  const checks: Check[] = [];
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
    checks.length = 0;
    loop.reset();
  });
  process.on('exit', () => process.stderr.write(table(samples, loop) + slowest(checks)));
  return {
    onStart: () => undefined,
    onEnd(span: ReadableSpan) {
      const [seconds, nanos] = span.duration;
      const ms = seconds * 1e3 + nanos / 1e6;
      if (span.name === 'broker.check') {
        const id = span.spanContext().spanId;
        checks.push({ ms, stages: open.get(id) ?? new Map() });
        open.delete(id);
        record('check', ms);
        return;
      }
      const stage = span.name.replace(/^broker\.check\./, '');
      record(stage, ms);
      const parent = span.parentSpanContext?.spanId;
      if (parent === undefined) return;
      const stages = open.get(parent) ?? open.set(parent, new Map()).get(parent)!;
      stages.set(stage, (stages.get(stage) ?? 0) + ms);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

interface Check {
  ms: number;
  stages: Map<string, number>;
}

/**
 * Where the slowest 1 % of checks (by their own span) spent their time, stage by stage, beside the
 * mean of every check: what a stage's own p99 cannot say (the slowest checks need not be those
 * with the slowest stage). "between stages" is the check's time in no stage of it (an approval
 * recalled, a credential minted, the awaits between stages).
 */
function slowest(checks: Check[]): string {
  if (checks.length === 0) return '';
  const sorted = checks.slice().sort((a, b) => b.ms - a.ms);
  const tail = sorted.slice(0, Math.max(1, Math.ceil(sorted.length / 100)));
  const names = [...new Set(checks.flatMap((c) => [...c.stages.keys()]))];
  const mean = (of: Check[], part: (c: Check) => number) => of.reduce((sum, c) => sum + part(c), 0) / of.length;
  const between = (c: Check) => c.ms - [...c.stages.values()].reduce((sum, v) => sum + v, 0);
  const parts: Array<[string, (c: Check) => number]> = [
    ...names.map((name): [string, (c: Check) => number] => [name, (c) => c.stages.get(name) ?? 0]),
    ['between stages', between],
    ['check', (c) => c.ms],
  ];
  const tailTotal = mean(tail, (c) => c.ms);
  const rows = parts.map(([name, part]) => {
    const [all, slow] = [mean(checks, part), mean(tail, part)];
    return `${name.padEnd(32)} ${all.toFixed(2).padStart(8)} ${slow.toFixed(2).padStart(12)} ${`${((100 * slow) / tailTotal).toFixed(0)} %`.padStart(8)}`;
  });
  return [
    `the slowest 1 % of checks (${tail.length} of ${checks.length}, from ${tail.at(-1)!.ms.toFixed(2)} ms): mean ms per stage`,
    `${'stage'.padEnd(32)} ${'all'.padStart(8)} ${'slowest 1 %'.padStart(12)} ${'share'.padStart(8)}`,
    ...rows,
    '',
  ].join('\n');
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
