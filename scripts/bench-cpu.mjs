// npm run bench:cpu: the broker check's CPU per check, this build beside another one in the same
// run. Both services (this dist/ and BENCH_BASELINE's dist/ with its build/policy/policy.wasm) get
// the same world (bench-world.mjs) and the same open-loop load (bench-rate.mjs) in alternating
// rounds; each round reads the process's CPU time (/proc) over the checks it answered. Cheaper and
// steadier than `npm run bench` for a before/after of a hot-path change: a fixed rate the machine
// can carry, so the figure is what a check costs, not what a saturated process gives.
// Env: BENCH_BASELINE (a directory with dist/ and build/policy/, e.g. a build of main; without it
//      this build runs alone), BENCH_CPU_RATE (500), BENCH_CPU_S (10), BENCH_CPU_ROUNDS (4),
//      BENCH_CPU_WARMUP_S (5), BENCH_CPU_TOGETHER (true: both builds loaded at once in each round,
//      each at the rate, instead of one after the other), BENCH_DECISION_LOG (all),
//      BENCH_NODE_ARGS (e.g. --cpu-prof), BENCH_CPU_VIA (http; grpc: the same check asked through
//      Envoy's ext_authz gRPC Check, as bench-ext-authz.mjs asks it), BENCH_CPU_FLOW (true: each build
//      also runs on its own policies with the example information_flow enforced, every check
//      labelled, as `npm run bench`'s variant: each build's information_flow / plain ratio, from the
//      same rounds; BENCH_CPU_FLOW=only: the information_flow services alone).
import { loadavg } from 'node:os';
import { readFileSync } from 'node:fs';
import { benchDatabase, finish, freePort, killChildren, serviceCpuMs, servicePid, startService } from './bench-harness.mjs';
import { mcpCheckRequest, steadyGrpcRate } from './bench-ext-authz.mjs';
import { steadyRate } from './bench-rate.mjs';
import { refusalsText } from './bench-refusals.mjs';
import { benchBuilds, buildFlowPolicy, checkBody, seed } from './bench-world.mjs';

const RATE = Number(process.env.BENCH_CPU_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_CPU_S ?? 10);
const ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 4);
const WARMUP_S = Number(process.env.BENCH_CPU_WARMUP_S ?? 5);
const BASELINE = process.env.BENCH_BASELINE;
const DECISION_LOG = process.env.BENCH_DECISION_LOG ?? 'all';
const TOGETHER = process.env.BENCH_CPU_TOGETHER === 'true';
const VIA = process.env.BENCH_CPU_VIA ?? 'http';
const FLOW = process.env.BENCH_CPU_FLOW ?? 'false';

async function service(name, env, main) {
  const grpcPort = VIA === 'grpc' ? await freePort() : undefined;
  const grpcEnv = grpcPort ? { EXT_AUTHZ_GRPC_PORT: String(grpcPort) } : {};
  // Postgres is shared (100 connections): a small pool each, as both carry the same modest rate.
  const base = await startService({ DECISION_LOG, DATABASE_POOL_MAX: '8', ...grpcEnv, ...env }, [], main);
  return { name, base, grpcPort, world: null };
}

/** The build's steady load for `seconds`, through the route or through ext_authz gRPC (BENCH_CPU_VIA). */
function load(target, seconds) {
  if (VIA === 'grpc') {
    const { brokerToken } = target.world;
    return steadyGrpcRate({
      address: `127.0.0.1:${target.grpcPort}`,
      brokerToken,
      request: mcpCheckRequest(target.world),
      rate: RATE,
      seconds,
    });
  }
  return steadyRate({
    base: target.base,
    path: '/api/broker/check',
    token: target.world.brokerToken,
    body: checkBody(target.world),
    rate: RATE,
    seconds,
    connections: 20,
  });
}

async function round(target) {
  const before = serviceCpuMs(target.base);
  const [user, system] = userSystemTicks(target.base);
  const result = await load(target, SECONDS);
  const checks = result.ok2xx + result.non2xx;
  const [userAfter, systemAfter] = userSystemTicks(target.base);
  const systemShare = (systemAfter - system) / (userAfter - user + systemAfter - system);
  return {
    cpuMicros: (1000 * (serviceCpuMs(target.base) - before)) / checks,
    systemShare,
    checks,
    non2xx: result.non2xx,
    refusals: result.refusals,
    errors: result.errors,
  };
}

/** The process's user and system CPU ticks (stat(5) fields 14 and 15): how much of a check is the kernel's. */
function userSystemTicks(base) {
  const fields = readFileSync(`/proc/${servicePid(base)}/stat`, 'utf8')
    .split(') ')[1]
    .split(' ');
  return [Number(fields[11]), Number(fields[12])];
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

let db;
try {
  db = await benchDatabase();
  const builds = benchBuilds(BASELINE);
  const targets = [];
  for (const build of builds) {
    if (FLOW !== 'only') targets.push(await service(build.name, build.env, build.main));
    if (FLOW === 'true' || FLOW === 'only') {
      const flowPolicy = buildFlowPolicy(build.root);
      targets.push(await service(`${build.name}, information_flow`, { POLICY_WASM_PATH: flowPolicy }, build.main));
    }
  }
  for (const [index, target] of targets.entries()) target.world = await seed(target.base, db, { name: `bench-cpu-${index}` });
  for (const target of targets) await load(target, WARMUP_S);
  const figures = new Map(targets.map((target) => [target.name, []]));
  // Ratios per round: this build / baseline (each kind of service), and each build's information_flow / plain.
  const pairs = [];
  const kinds = FLOW === 'only' ? [', information_flow'] : FLOW === 'true' ? ['', ', information_flow'] : [''];
  if (BASELINE) for (const kind of kinds) pairs.push([`this build${kind}`, `baseline${kind}`]);
  if (FLOW === 'true') for (const build of builds) pairs.push([`${build.name}, information_flow`, build.name]);
  const ratios = new Map(pairs.map(([a, b]) => [`${a} / ${b}`, []]));
  for (let i = 0; i < ROUNDS; i += 1) {
    const order = i % 2 === 0 ? targets : [...targets].reverse();
    const measured = {};
    // Together: every load at once, so every build shares the machine's state of the moment (a
    // shared machine's load moves between rounds more than a small change moves the figure).
    const results = TOGETHER ? await Promise.all(order.map(round)) : [];
    for (const [index, target] of order.entries()) {
      const result = TOGETHER ? results[index] : await round(target);
      measured[target.name] = result.cpuMicros;
      figures.get(target.name).push(result.cpuMicros);
      const refused = result.refusals ? `: ${refusalsText(result.refusals)}` : '';
      const failed = result.non2xx + result.errors > 0 ? ` (${result.non2xx} non-2xx${refused}, ${result.errors} errors)` : '';
      console.log(
        `round ${i + 1} ${target.name}: ${result.cpuMicros.toFixed(0)} µs CPU per check (${(100 * result.systemShare).toFixed(0)} % system) over ${result.checks}${failed}`,
      );
    }
    for (const [a, b] of pairs) ratios.get(`${a} / ${b}`).push(measured[a] / measured[b]);
  }
  for (const [name, values] of figures) console.log(`${name}: median ${median(values).toFixed(0)} µs CPU per check (${RATE}/s)`);
  for (const [name, values] of ratios) {
    console.log(`${name}: median ${median(values).toFixed(3)} (${values.map((r) => r.toFixed(3)).join(', ')})`);
  }
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  killChildren();
  await finish(db);
}
