// npm run bench:flow: `npm run bench`'s information_flow variant alone, beside the plain check:
// the CPU per check of each at saturation (autocannon, BENCH_CONNECTIONS connections, as the
// bench's alternating rounds load them) and the ratio the bench's target reads (<= 1.10), in a
// few minutes instead of the whole bench. With BENCH_BASELINE (a directory with dist/ and
// build/policy/, e.g. a build of main) that build's pair runs in the same rounds, on its own
// policies, so a change's ratio and its baseline's come from one run.
// Env: BENCH_BASELINE, BENCH_CONNECTIONS (100), BENCH_PAIR_ROUNDS (4), BENCH_PAIR_S (10),
//      BENCH_FLOW_WARMUP_S (10: each service's load before the rounds; 0 as `npm run bench` has it
//      for its information_flow service), BENCH_DECISION_LOG (all).
import { benchDatabase, finish, killChildren, require, serviceCpuMs, startService } from './bench-harness.mjs';
import { benchBuilds, buildFlowPolicy, checkBody, seed } from './bench-world.mjs';

const autocannon = require('autocannon');

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 4);
const PAIR_S = Number(process.env.BENCH_PAIR_S ?? 10);
const WARMUP_S = Number(process.env.BENCH_FLOW_WARMUP_S ?? 10);
const BASELINE = process.env.BENCH_BASELINE;
const DECISION_LOG = process.env.BENCH_DECISION_LOG ?? 'all';

function load(target, seconds) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${target.base}/api/broker/check`,
        method: 'POST',
        headers: { authorization: `Bearer ${target.world.brokerToken}`, 'content-type': 'application/json' },
        body: checkBody(target.world),
        connections: CONNECTIONS,
        duration: seconds,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

let db;
try {
  db = await benchDatabase();
  const builds = benchBuilds(BASELINE);
  const targets = [];
  for (const build of builds) {
    // Postgres is shared (100 connections): a small pool each.
    const env = { DECISION_LOG, DATABASE_POOL_MAX: '8' };
    const plain = { name: build.name, base: await startService({ ...env, ...build.env }, [], build.main) };
    const flowPolicy = buildFlowPolicy(build.root);
    const flow = {
      name: `${build.name}, information_flow`,
      base: await startService({ ...env, POLICY_WASM_PATH: flowPolicy }, [], build.main),
    };
    targets.push(plain, flow);
  }
  for (const [index, target] of targets.entries()) target.world = await seed(target.base, db, { name: `bench-flow-${index}` });
  for (const target of targets) if (WARMUP_S > 0) await load(target, WARMUP_S);
  const figures = new Map(targets.map((target) => [target.name, { ms: 0, checks: 0, rounds: [] }]));
  const ratios = new Map(builds.map((build) => [build.name, []]));
  for (let round = 1; round <= ROUNDS; round += 1) {
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    const measured = {};
    for (const target of order) {
      const before = serviceCpuMs(target.base);
      const result = await load(target, PAIR_S);
      const ms = serviceCpuMs(target.base) - before;
      const figure = figures.get(target.name);
      figure.ms += ms;
      figure.checks += result.requests.total;
      measured[target.name] = (1000 * ms) / result.requests.total;
      figure.rounds.push(measured[target.name]);
      const failed = result.non2xx + result.errors > 0 ? ` (${result.non2xx} non-2xx, ${result.errors} errors)` : '';
      console.log(
        `round ${round} ${target.name}: ${measured[target.name].toFixed(0)} µs CPU per check, ${Math.round(result.requests.average)}/s${failed}`,
      );
    }
    for (const build of builds) ratios.get(build.name).push(measured[`${build.name}, information_flow`] / measured[build.name]);
  }
  for (const [name, { ms, checks }] of figures)
    console.log(`${name}: ${((1000 * ms) / checks).toFixed(0)} µs CPU per check over the ${checks} checks of all rounds`);
  for (const build of builds) {
    const flow = figures.get(`${build.name}, information_flow`);
    const plain = figures.get(build.name);
    const pooled = flow.ms / flow.checks / (plain.ms / plain.checks);
    const perRound = ratios.get(build.name);
    console.log(
      `${build.name}: information_flow / plain ${pooled.toFixed(3)} over all rounds (the bench's figure), median of rounds ${median(perRound).toFixed(3)} (${perRound.map((r) => r.toFixed(3)).join(', ')})`,
    );
  }
} finally {
  killChildren();
  await finish(db);
}
