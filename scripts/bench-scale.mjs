// The fixed-rate and scale parts of `npm run bench` (see bench.mjs): latency at a steady rate the
// service can carry (evenly spaced requests, bench-rate.mjs), the same for the floor of a check
// (bench-floor.mjs) and for the disk's fdatasync, the service as WORKERS=2, and the service on a
// Redis Cluster of three local masters (REDIS_CLUSTER_NODES).
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DATABASE_URL, REDIS_KEY_PREFIX, REDIS_URL, freePort, percentile, root, sleep, start, waitFor } from './bench-harness.mjs';
import { steadyRate } from './bench-rate.mjs';

export const RATE = Number(process.env.BENCH_RATE ?? 1000);
export const RATE_CONNECTIONS = Number(process.env.BENCH_RATE_CONNECTIONS ?? 20);
export const RATE_S = Number(process.env.BENCH_RATE_S ?? 15);
/** Sent at the same rate and not counted first: a broker's steady state, not a cold start (JIT, pools). */
export const RATE_WARMUP_S = Number(process.env.BENCH_RATE_WARMUP_S ?? 3);

/**
 * POST /api/broker/check at a steady RATE checks/s (evenly spaced, open loop: see bench-rate.mjs
 * for why not autocannon's overallRate) over at most RATE_CONNECTIONS connections: p50/p90/p99/max,
 * after RATE_WARMUP_S at the same rate that are not counted (`warmedUp` runs between the two).
 */
export async function atFixedRate(title, { base, token, body }, warmedUp = () => undefined) {
  console.log(`fixed rate: ${title} (${RATE}/s over ${RATE_CONNECTIONS} connections, ${RATE_WARMUP_S} s warm-up + ${RATE_S} s)`);
  const steady = (seconds) =>
    steadyRate({ base, path: '/api/broker/check', token, body, rate: RATE, seconds, connections: RATE_CONNECTIONS });
  if (RATE_WARMUP_S > 0) await steady(RATE_WARMUP_S);
  await warmedUp();
  const before = cpuTimes();
  const result = await steady(RATE_S);
  return { ...result, ...machineShares(before, cpuTimes()) };
}

/** The machine's CPU time counters (all cores, clock ticks) from /proc/stat (Linux). */
export function cpuTimes() {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { busy: user + nice + system + irq + softirq, idle: idle + iowait, steal };
}

/**
 * How busy the machine's cores were over a run, and what share of their time the hypervisor kept
 * (steal: other guests, or its emulation of this guest's own disk flushes): a tail that no process
 * here accounts for is often one of these.
 */
export function machineShares(a, b) {
  const total = b.busy - a.busy + (b.idle - a.idle) + (b.steal - a.steal);
  const share = (ticks) => +((100 * ticks) / total).toFixed(1);
  return { machineBusyPct: share(b.busy - a.busy), stealPct: share(b.steal - a.steal) };
}

/**
 * The floor of a check (bench-floor.mjs) on a free port, against the bench's database and Redis:
 * its records name `grantId`, a grant of the seeded world (call_records' foreign key). `commit`:
 * `each` (a commit per request, the reference server) or `grouped` (the group-committed floor).
 */
export async function startFloor(grantId, commit = 'each') {
  const port = await freePort();
  const child = start('node', ['scripts/bench-floor.mjs'], {
    FLOOR_COMMIT: commit,
    PORT: String(port),
    DATABASE_URL,
    REDIS_URL,
    REDIS_KEY_PREFIX,
    FLOOR_GRANT_ID: grantId,
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`);
  return { base, pid: child.pid, stop: () => child.kill('SIGTERM') };
}

/**
 * The disk under the check: an 8 kB write and fdatasync (what a Postgres commit waits for) at
 * `rate`/s (RATE) for `seconds`, in a temporary file on the device of Postgres's data directory (the WAL's,
 * unless moved) when the temporary directory is there, else beside this repository.
 */
export function diskSyncAtRate(seconds, postgresDataDirectory, rate = RATE) {
  const device = (dir) => {
    try {
      return statSync(dir).dev;
    } catch {
      return undefined; // not readable from here (another user, another machine)
    }
  };
  const postgresDevice = device(postgresDataDirectory);
  const parent = postgresDevice !== undefined && device(tmpdir()) === postgresDevice ? tmpdir() : root;
  const dir = mkdtempSync(path.join(parent, '.bench-disk-'));
  const fd = openSync(path.join(dir, 'sync'), 'w');
  const page = Buffer.alloc(8192, 1);
  const latencies = [];
  try {
    const started = performance.now();
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    for (let i = 0; i < rate * seconds; i += 1) {
      // Evenly spaced, like the checks; Atomics.wait sleeps for a fraction of a millisecond.
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 0) Atomics.wait(sleeper, 0, 0, wait);
      const t = performance.now();
      writeSync(fd, page, 0, page.length, (i % 1024) * page.length);
      fdatasyncSync(fd);
      latencies.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  latencies.sort((x, y) => x - y);
  const ms = (p) => +percentile(latencies, p).toFixed(2);
  const samePostgresDevice = postgresDevice === undefined ? 'unknown' : device(parent) === postgresDevice ? 'yes' : 'no';
  return { p50: ms(50), p90: ms(90), p99: ms(99), max: +latencies.at(-1).toFixed(2), samePostgresDevice };
}

/** Three cluster-enabled redis-servers on spare ports, joined; `stop()` kills them. */
export async function startRedisCluster() {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-cluster-'));
  const ports = [await freePort(), await freePort(), await freePort()];
  const children = [];
  for (const port of ports) {
    const bus = await freePort();
    children.push(
      spawn(
        'redis-server',
        [
          ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
          ...['--cluster-enabled', 'yes', '--cluster-port', String(bus), '--cluster-config-file', `nodes-${port}.conf`],
        ],
        { stdio: 'ignore' },
      ),
    );
  }
  const cli = (port, ...args) => {
    try {
      return execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  for (const port of ports) {
    for (let i = 0; i < 100 && cli(port, 'PING') !== 'PONG'; i += 1) await sleep(50);
  }
  execFileSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
    stdio: 'ignore',
  });
  for (const port of ports) {
    for (let i = 0; i < 200 && !cli(port, 'CLUSTER', 'INFO').includes('cluster_state:ok'); i += 1) await sleep(50);
  }
  return {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    stop() {
      for (const child of children) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
