// Loaded into the service by `npm run bench` (node --require) to say where the milliseconds of a
// broker check go: wall-clock time of each phase (the service's own functions, wrapped), of the
// whole request as the HTTP server sees it, and the event loop's delay (time a ready request waits
// for the process). Printed to stderr when the service exits. Not used outside the benchmark.
const path = require('node:path');
const http = require('node:http');
const { performance, monitorEventLoopDelay } = require('node:perf_hooks');

const dist = path.resolve(__dirname, '../dist/src');
const samples = new Map();
const record = (name, ms) => (samples.get(name) ?? samples.set(name, []).get(name)).push(ms);

function timed(name, fn) {
  return function (...args) {
    const started = performance.now();
    const result = fn.apply(this, args);
    if (result && typeof result.then === 'function') return result.finally(() => record(name, performance.now() - started));
    record(name, performance.now() - started);
    return result;
  };
}
const method = (file, className, name, label) => {
  const proto = require(path.join(dist, file))[className].prototype;
  proto[name] = timed(label, proto[name]);
};
const fn = (file, name, label) => {
  const mod = require(path.join(dist, file));
  mod[name] = timed(label, mod[name]);
};

fn('broker/check.js', 'checkCall', 'checkCall (all but HTTP)');
method('broker/chain.js', 'ChainCache', 'get', '  chain (cache)');
fn('broker/credentials.js', 'confirmBroker', '  broker credential');
fn('broker/credentials.js', 'subjectOfCall', '  subject token');
method('broker/tree-facts.js', 'TreeFactsCache', 'factsFor', '  tree facts (cache)');
method('policy/engine.js', 'PolicyEngine', 'evaluate', '  policy evaluate (WASM)');
method('budget/sliding-window.js', 'SlidingWindowBudget', 'run', '  budget script (Redis)');
method('broker/call-trail.js', 'CallTrailWriter', 'write', '  call record (group commit)');

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res) {
  if (event === 'request' && req.method === 'POST' && req.url.startsWith('/api/broker/check')) {
    const started = performance.now();
    res.once('finish', () => record('whole request (server)', performance.now() - started));
  }
  return emit.apply(this, arguments);
};

const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();

// The bench warms the service up first (JIT, caches, connection pools) and then sends SIGUSR2:
// the table covers only what came after.
process.on('SIGUSR2', () => {
  samples.clear();
  loop.reset();
});

// Pauses of the whole process for garbage collection, as the table's last rows.
const { PerformanceObserver } = require('node:perf_hooks');
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) record(entry.detail?.kind === 1 ? 'GC pause: scavenge' : 'GC pause: other', entry.duration);
}).observe({ entryTypes: ['gc'] });

process.on('exit', () => {
  const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const rows = [...samples].map(([name, values]) => {
    const sorted = values.slice().sort((a, b) => a - b);
    const mean = sorted.reduce((sum, v) => sum + v, 0) / sorted.length;
    return `${name.padEnd(32)} ${String(sorted.length).padStart(7)} ${[mean, quantile(sorted, 0.5), quantile(sorted, 0.9), quantile(sorted, 0.99)].map((v) => v.toFixed(2).padStart(8)).join('')}`;
  });
  const ms = (ns) => (ns / 1e6).toFixed(2).padStart(8);
  process.stderr.write(
    [
      `\nwhere a check's time goes (ms, wall clock; nested phases indented)`,
      `${'phase'.padEnd(32)} ${'count'.padStart(7)}${['mean', 'p50', 'p90', 'p99'].map((h) => h.padStart(8)).join('')}`,
      ...rows,
      `${'event loop delay'.padEnd(32)} ${'-'.padStart(7)}${ms(loop.mean)}${ms(loop.percentile(50))}${ms(loop.percentile(90))}${ms(loop.percentile(99))}`,
      '',
    ].join('\n'),
  );
});
