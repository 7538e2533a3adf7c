// The fixed-rate and scale parts of `npm run bench` (see bench.mjs): latency at a steady rate the
// service can carry (evenly spaced requests, bench-rate.mjs), the service as WORKERS=2, and the service on a Redis
// Cluster of three local masters (REDIS_CLUSTER_NODES).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, sleep } from './bench-harness.mjs';
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
  return steady(RATE_S);
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
