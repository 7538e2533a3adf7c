// npm run bench:protocols: the broker check through its protocol doors, beside the plain check, in
// the same run on the same service (dist/src/main.js, a throwaway database and Redis key prefix,
// the chain of depth 3 that `npm run bench` checks):
//   - plain:   POST /api/broker/check with the check's body;
//   - authzen: POST /access/v1/evaluation, the same call as an AuthZEN 1.0 evaluation;
//   - opa:     POST /v1/data/grant_broker/check, the same body as OPA's data API input.
// After a warm-up, the three run in alternating rounds (so that each sees the same machine), each
// round starting with another door; every answer is an allow.
// Prints checks/s and the service's CPU per check of each, and each door's ratio to the plain check.
// Env: BENCH_PROTOCOLS_CONNECTIONS (50), BENCH_PROTOCOLS_ROUNDS (3), BENCH_PROTOCOLS_ROUND_S (8),
//      plus the service's (BENCH_DATABASE_BASE_URL, REDIS_URL).
import { benchDatabase, finish, killChildren, machine, require, serviceCpuMs, startService } from './bench-harness.mjs';
import { CHECK_ARGS, checkBody, seed } from './bench-world.mjs';

const autocannon = require('autocannon');

const CONNECTIONS = Number(process.env.BENCH_PROTOCOLS_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_PROTOCOLS_ROUNDS ?? 3);
const ROUND_S = Number(process.env.BENCH_PROTOCOLS_ROUND_S ?? 8);
const WARMUP_S = 3;

function doors(world) {
  const authzen = JSON.stringify({
    subject: { type: 'agent', id: world.agentId, properties: { token: world.agentToken } },
    action: { name: 'repos.read_file' },
    resource: { type: 'grant', id: world.leafId, properties: { args: CHECK_ARGS } },
  });
  return {
    plain: { path: '/api/broker/check', body: checkBody(world), allowed: (answer) => answer.decision === 'allow' },
    authzen: { path: '/access/v1/evaluation', body: authzen, allowed: (answer) => answer.decision === true },
    opa: { path: '/v1/data/grant_broker/check', body: `{"input":${checkBody(world)}}`, allowed: (answer) => answer.result?.allow === true },
  };
}

function load(base, door, headers, seconds = ROUND_S) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: `${base}${door.path}`, connections: CONNECTIONS, duration: seconds, method: 'POST', headers, body: door.body },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

let db;
try {
  db = await benchDatabase();
  const base = await startService({ DECISION_LOG: 'all' });
  const world = await seed(base, db, { name: 'protocols' });
  const headers = { authorization: `Bearer ${world.brokerToken}`, 'content-type': 'application/json' };
  const paths = doors(world);
  for (const [name, door] of Object.entries(paths)) {
    const answer = await (await fetch(`${base}${door.path}`, { method: 'POST', headers, body: door.body })).json();
    if (!door.allowed(answer)) throw new Error(`${name}: the benchmarked call is not allowed: ${JSON.stringify(answer)}`);
  }
  const totals = Object.fromEntries(Object.keys(paths).map((name) => [name, { requests: 0, seconds: 0, cpuMs: 0, errors: 0 }]));
  // Warm-up (not counted): every door's code compiled before any round is measured.
  for (const door of Object.values(paths)) await load(base, door, headers, WARMUP_S);
  const names = Object.keys(paths);
  for (let round = 1; round <= ROUNDS; round += 1) {
    // Each round starts with another door, so that none always follows the same one.
    for (const name of [...names.slice((round - 1) % names.length), ...names.slice(0, (round - 1) % names.length)]) {
      const door = paths[name];
      const cpuBefore = serviceCpuMs(base);
      const result = await load(base, door, headers);
      const total = totals[name];
      total.cpuMs += serviceCpuMs(base) - cpuBefore;
      total.requests += result.requests.total;
      total.seconds += result.duration;
      total.errors += result.non2xx + result.errors + result.timeouts;
      const statuses = Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => `${code}×${count}`);
      console.log(
        `round ${round} ${name}: ${Math.round(result.requests.total / result.duration)} checks/s (${statuses.join(' ')}; ${result.errors} errors, ${result.timeouts} timeouts)`,
      );
    }
  }
  const figure = (name) => {
    const total = totals[name];
    return {
      checksPerSec: Math.round(total.requests / total.seconds),
      cpuMicrosPerCheck: Math.round((1000 * total.cpuMs) / total.requests),
      errors: total.errors,
    };
  };
  const plain = figure('plain');
  console.log(`\n${machine()}; ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${ROUND_S} s each, decision log on`);
  console.log('door      checks/s  CPU µs/check  CPU vs plain  errors');
  for (const name of Object.keys(paths)) {
    const f = figure(name);
    const ratio = (f.cpuMicrosPerCheck / plain.cpuMicrosPerCheck).toFixed(2);
    console.log(
      `${name.padEnd(9)} ${String(f.checksPerSec).padStart(8)}  ${String(f.cpuMicrosPerCheck).padStart(12)}  ${`${ratio}x`.padStart(12)}  ${String(f.errors).padStart(6)}`,
    );
  }
} finally {
  killChildren();
  await finish(db);
}
