// npm run bench:tail: where the broker check's slowest 1 % wait, at rates a shared machine carries.
// For each rate of BENCH_TAIL_RATES (300,600), in BENCH_PAIR_ROUNDS rounds (2): the disk's 8 kB
// write + fdatasync at that rate, then, all at once and each at that rate, the service with its
// stages timed (TRACE_STAGES: each stage's p99 from its spans, the event loop's delay and GC pauses
// beside them, and where the slowest 1 % of checks spent their time, stage by stage; printed when it
// stops), the floor of a check (bench-floor.mjs with its rows group-committed: the same work without
// the service's code) and the reference server (bench-floor.mjs, a commit per request); the check's
// p99 beside 2 x that fdatasync p99 + 1 ms and beside the floor's p99 at the same moments. BENCH_TAIL_BASE (directories, comma-separated, each holding
// the dist/ and src/budget/*.lua of another build, e.g. main's) adds those builds as services
// served at the same time, each on a database of its own: a before/after of a change under the same
// moments of a shared machine, which rounds taken in turn cannot promise. BENCH_TAIL_BASE_NODE_ARGS: node flags of those builds'
// services only (a before/after of a flag). BENCH_RATE_S (15), BENCH_RATE_CONNECTIONS (20) and
// BENCH_RATE_WARMUP_S (3) as in `npm run bench`.
import { loadavg } from 'node:os';
import path from 'node:path';
import {
  DATABASE_URL,
  benchDatabase,
  finish,
  killChildren,
  processCpuMs,
  serviceCpuMs,
  signalService,
  startService,
  stopService,
} from './bench-harness.mjs';
import { steadyRate } from './bench-rate.mjs';
import { RATE_CONNECTIONS, RATE_S, RATE_WARMUP_S, diskSyncAtRate, startFloor } from './bench-scale.mjs';
import { checkBody, seed } from './bench-world.mjs';

const RATES = (process.env.BENCH_TAIL_RATES ?? '300,600').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 2);
const BASES = (process.env.BENCH_TAIL_BASE ?? '').split(',').filter(Boolean);
const BASE_NODE_ARGS = process.env.BENCH_TAIL_BASE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

const fixedRate = async (target, rate, warmedUp = () => undefined) => {
  const steady = (seconds) => steadyRate({ ...target, path: '/api/broker/check', rate, seconds, connections: RATE_CONNECTIONS });
  if (RATE_WARMUP_S > 0) await steady(RATE_WARMUP_S);
  await warmedUp();
  return steady(RATE_S);
};

async function main() {
  const db = await benchDatabase();
  const rows = [];
  try {
    const variants = [{ name: 'this build', main: 'dist/src/main.js', nodeArgs: [] }];
    for (const base of BASES.reverse()) {
      variants.unshift({ name: `base (${path.basename(base)})`, main: path.join(base, 'dist/src/main.js'), nodeArgs: BASE_NODE_ARGS });
    }
    // A database each: every record joins its database's one Merkle tree under that tree's row lock
    // (trail_append), so builds sharing one would each wait for the others' commits, a wait that
    // neither a service alone nor the floor (no tree) has. The Postgres server, its WAL and its
    // flushes stay shared, as the machine's cores are.
    for (const [i, variant] of variants.entries()) {
      const suffix = i === 0 ? '' : `_v${i}`;
      Object.assign(variant, { db: i === 0 ? db : await benchDatabase(suffix), databaseUrl: `${DATABASE_URL}${suffix}` });
    }
    const dataDirectory = (await db.raw('show data_directory')).rows[0].data_directory;
    let floor;
    let reference;
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const rate of RATES) {
        const disk = diskSyncAtRate(5, dataDirectory, rate);
        const target = disk.p99 * 2 + 1;
        const load = loadavg()
          .map((l) => l.toFixed(2))
          .join(' ');
        console.log(
          `round ${round}, ${rate}/s: fdatasync p50 ${disk.p50} p99 ${disk.p99} ms (target ${target.toFixed(2)} ms); load ${load}`,
        );
        // Every variant (and the reference server) served at once, each at the rate: the same
        // moments of a shared machine fall on all of them, which rounds taken in turn cannot promise.
        // A fresh service per round: its stage table (stderr, at exit) covers this round only.
        const started = [];
        for (const variant of variants) {
          const env = { DECISION_LOG: 'all', TRACE_STAGES: 'true', DATABASE_URL: variant.databaseUrl };
          const base = await startService(env, variant.nodeArgs, variant.main);
          const world = await seed(base, variant.db, { name: `tail-${round}-${rate}-${started.length}` });
          started.push({ variant, base, world, target: { base, token: world.brokerToken, body: checkBody(world) } });
        }
        floor ??= await startFloor(started[0].world.leafId, 'grouped');
        reference ??= await startFloor(started[0].world.leafId, 'each');
        const cpuBefore = new Map();
        // The bare servers' CPU per request too: on cores shared with every other process, a server's
        // share of them divided by its CPU per request is the rate it can carry at all.
        const bare = async (server) => {
          const run = await fixedRate({ base: server.base, token: 'none', body: '{"tool":"repos.read_file"}' }, rate, () => {
            cpuBefore.set(server.base, processCpuMs(server.pid));
          });
          const cpuMs = processCpuMs(server.pid) - cpuBefore.get(server.base);
          return { ...run, cpuMicros: Math.round((1000 * cpuMs) / (run.ok2xx + run.non2xx)) };
        };
        const [floorRun, referenceRun, ...results] = await Promise.all([
          bare(floor),
          bare(reference),
          ...started.map(({ base, target }) =>
            fixedRate(target, rate, () => {
              signalService(base, 'SIGUSR2');
              cpuBefore.set(base, serviceCpuMs(base));
            }),
          ),
        ]);
        for (const [i, { variant, base }] of started.entries()) {
          const result = results[i];
          const cpuMicros = Math.round((1000 * (serviceCpuMs(base) - cpuBefore.get(base))) / (result.ok2xx + result.non2xx));
          await stopService(base);
          console.log(
            `\n== round ${round}, ${rate}/s, ${variant.name}: check p50 ${result.p50} p99 ${result.p99} max ${result.max} ms ` +
              `(${(result.p99 / floorRun.p99).toFixed(2)}x the floor's p99)`,
          );
          console.log(
            `   ${result.ok2xx} ok, ${result.non2xx} non-2xx, ${result.errors} errors; ${cpuMicros} µs service CPU per check; generator loop p99 ${result.generatorLoopDelayP99}`,
          );
          rows.push({
            round,
            rate,
            variant: variant.name,
            p50: result.p50,
            p99: result.p99,
            target,
            ratio: result.p99 / target,
            floorRatio: result.p99 / floorRun.p99,
            cpuMicros,
            load,
          });
        }
        console.log(
          `== round ${round}, ${rate}/s, floor (bare HTTP, one Redis script, a group-committed row: the same work without our code): p50 ${floorRun.p50} p99 ${floorRun.p99} ms; ${floorRun.cpuMicros} µs CPU per check`,
        );
        console.log(
          `== round ${round}, ${rate}/s, reference (the same, a commit per request): p50 ${referenceRun.p50} p99 ${referenceRun.p99} ms; ${referenceRun.cpuMicros} µs CPU per check\n`,
        );
        for (const [variant, run] of [
          ['floor (grouped commit)', floorRun],
          ['reference (commit each)', referenceRun],
        ]) {
          rows.push({
            round,
            rate,
            variant,
            p50: run.p50,
            p99: run.p99,
            target,
            ratio: run.p99 / target,
            floorRatio: run.p99 / floorRun.p99,
            cpuMicros: run.cpuMicros,
            load,
          });
        }
      }
    }
    floor?.stop();
    reference?.stop();
  } finally {
    await finish(db);
  }
  console.log(
    '\nround  rate  variant                          p50 ms  p99 ms  2xfsync p99+1  ratio  /floor p99  µs CPU/check  load (1, 5, 15 min)',
  );
  for (const r of rows) {
    console.log(
      `${String(r.round).padStart(5)} ${String(r.rate).padStart(5)}  ${r.variant.slice(0, 32).padEnd(32)} ${r.p50.toFixed(2).padStart(7)} ${r.p99.toFixed(2).padStart(7)} ${r.target.toFixed(2).padStart(14)} ${r.ratio.toFixed(2).padStart(6)} ${r.floorRatio.toFixed(2).padStart(11)} ${String(r.cpuMicros ?? '').padStart(13)}  ${r.load}`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  killChildren();
  process.exit(1);
});
