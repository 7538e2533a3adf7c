// npm run bench: the broker check under load, beside two baselines, on this machine.
//   1. POST /api/broker/check on the built service (dist/src/main.js) against the local Postgres
//      (a throwaway database) and Redis (a throwaway key prefix), through a chain of depth 3
//      (root -> child -> grandchild -> great-grandchild), driven by autocannon;
//   2. the same broker/check entrypoint evaluated in-process by opa-wasm (evaluations/s);
//   3. `opa run --server` (the pinned .tools/bin/opa) evaluating it over REST under the same load;
//   4. the service with no decision logged (DECISION_LOG=off), alternating with 1., so the cost of
//      decision logs (on by default, and on in 1.) shows;
//   5. the service again, on a module with the three example org packages enforced
//      (ORG_POLICY_MODES) and a chain whose root constrains repositories, refs and paths, so
//      every check also extracts its resources from `args` (CONTRACT §8, §10).
// Env: BENCH_CONNECTIONS (100), BENCH_DURATION_S (20), BENCH_WASM_S (5), BENCH_DECISION_LOG (all,
//      the service's default), BENCH_PAIR_ROUNDS (3) and BENCH_PAIR_S (10): alternating rounds of
//      1., 4. and 5., BENCH_RATE (1000), BENCH_RATE_CONNECTIONS (20), BENCH_RATE_S (15) and
//      BENCH_RATE_WARMUP_S (3): the fixed-rate runs,
//      BENCH_SCALE_S (10): WORKERS=1, WORKERS=2 and Redis Cluster at full load,
//      BENCH_DATABASE_BASE_URL (postgres://postgres@127.0.0.1:5432/), REDIS_URL,
//      BENCH_NODE_ARGS (extra node flags for the services, e.g. --trace-gc-nvp) and
//      BENCH_SERVICE_STDOUT (a file the services' stdout is appended to: decision logs and V8
//      traces; by default it is discarded).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  REDIS_KEY_PREFIX,
  REDIS_URL,
  api,
  benchDatabase,
  finish,
  freePort,
  humanToken,
  killChildren,
  machine,
  registerBroker,
  require,
  root,
  run,
  start,
  serviceCpuMs,
  signalService,
  startService,
  stopService,
  waitFor,
} from './bench-harness.mjs';
import {
  RATE,
  RATE_CONNECTIONS,
  RATE_S,
  RATE_WARMUP_S,
  atFixedRate,
  cpuTimes,
  diskSyncAtRate,
  machineShares,
  startFloor,
  startRedisCluster,
} from './bench-scale.mjs';

const autocannon = require('autocannon');
const { Redis } = require('ioredis');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
const WASM_S = Number(process.env.BENCH_WASM_S ?? 5);
const PAIR_ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 3);
const PAIR_S = Number(process.env.BENCH_PAIR_S ?? 10);
const SCALE_S = Number(process.env.BENCH_SCALE_S ?? 10);
/** The main run's and the org run's decision logging: the service's default unless told. */
const DECISION_LOG = process.env.BENCH_DECISION_LOG ?? 'all';
/** Runs whose cores lost this share of their time to the hypervisor (steal) are named in the report. */
const STEAL_NOTICE_PCT = 5;
/** What every benchmarked check calls with: a read of a file of a repository at a ref. */
const CHECK_ARGS = { repository: 'acme/api', ref: 'refs/heads/feature/bench', path: 'docs/README.md' };
/** What the org-packages run constrains its chain to (at the root; the children inherit it). */
const BENCH_RESOURCES = {
  repositories: ['acme/*', 'acme-labs/docs'],
  refs: ['refs/heads/feature/*', 'refs/heads/release-*'],
  paths: ['docs/**', 'src/**'],
};

/** Pod, member agent, broker, connection, and a depth-3 chain of grants, through the API. */
async function seed(base, db, { resources, name = 'bench' } = {}) {
  const owner = humanToken(`bench-owner-${run}`);
  const pod = await api(base, 'POST', '/api/pods', owner, { name: 'Bench pod' });
  await api(base, 'POST', `/api/registry/pods/${pod.id}/agents`, owner, { name: 'bench-bot' });
  const agentToken = (await api(base, 'POST', `/api/registry/pods/${pod.id}/agents/bench-bot/runtime-tokens`, owner, { name: 'bench' }))
    .token;
  const broker = await registerBroker(db, `${name}-broker`);
  const connection = await api(base, 'POST', '/api/connections', owner, {
    kind: 'code_hosting_app',
    brokerId: broker.id,
    externalInstallationId: `${name}-${run}`,
    tools: [{ name: 'repos.read_file', access: 'read', resource: { repository: '/repository', ref: '/ref', path: '/path' } }],
  });
  // Large enough never to deny during the run; a short window keeps the sorted sets small.
  const budget = { calls: 1_000_000, windowMs: 1000 };
  let grant = await api(base, 'POST', '/api/grants', owner, {
    connectionId: connection.id,
    target: { kind: 'pod', id: pod.id },
    tools: ['repos.read_file'],
    budget,
    ...(resources ? { resources } : {}),
  });
  for (let depth = 1; depth <= 3; depth += 1) grant = await api(base, 'POST', `/api/grants/${grant.id}/attenuate`, agentToken, {});
  return { brokerToken: broker.token, agentToken, leafId: grant.id };
}

function load(title, options) {
  return new Promise((resolve, reject) => {
    const before = cpuTimes();
    const instance = autocannon({ connections: CONNECTIONS, duration: DURATION_S, method: 'POST', ...options }, (error, result) =>
      error ? reject(error) : resolve({ ...result, machine: machineShares(before, cpuTimes()) }),
    );
    instance.on('error', reject);
    console.log(`load: ${title} (${CONNECTIONS} connections, ${options.duration ?? DURATION_S} s)`);
  });
}

/** The mean of each figure over several runs of one target. */
function meanSummary(runs) {
  const all = runs.map(summary);
  return Object.fromEntries(Object.keys(all[0]).map((key) => [key, Math.round(all.reduce((sum, s) => sum + s[key], 0) / all.length)]));
}

const summary = (r) => ({
  requestsPerSec: Math.round(r.requests.average),
  p50: r.latency.p50,
  p90: r.latency.p90,
  p99: r.latency.p99,
  ok2xx: r['2xx'],
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  ...r.machine,
});

/**
 * The broker/check input the service builds for the seeded chain, by the service's own code: its
 * chain cache, its facts query and its input builder (dist/), so baselines decide the same input.
 */
async function checkInputFor(db, leafId, agentId, brokerId) {
  const { ChainCache } = require(path.join(root, 'dist/src/broker/chain.js'));
  const { TreeFactsCache, TreeSnapshot } = require(path.join(root, 'dist/src/broker/tree-facts.js'));
  const { checkInput } = require(path.join(root, 'dist/src/broker/policy-input.js'));
  const { digestOf } = require(path.join(root, 'dist/src/kernel/digest.js'));
  const chain = await new ChainCache(db).get(leafId);
  const principal = { kind: 'agent', id: agentId };
  const facts = await new TreeFactsCache(db, 0).factsFor(new TreeSnapshot('bench', 0), chain, principal);
  const subject = { principal, source: 'subject_token' };
  const localTime = { time_zone: 'UTC', weekday: 3, hour: 10, minute: 0 };
  return checkInput(
    {
      brokerId,
      tool: 'repos.read_file',
      args: CHECK_ARGS,
      argsDigest: digestOf(CHECK_ARGS),
      subject,
      trustAssertedPrincipal: false,
      now: Date.now(),
      localTime,
    },
    chain,
    facts,
  );
}

/**
 * Redis bytes per allowed call per chain level: a fresh chain of depth 3 (4 levels) with an exact
 * window (calls <= 1000) takes CALLS allowed calls; MEMORY USAGE of every level's window, less the
 * same keys' size after one call, divided by the calls after the first and the levels.
 */
async function redisBytesPerCall(base, db, world) {
  const CALLS = 1000;
  const owner = humanToken(`bench-owner-${run}`);
  const podId = (await db('pods').first('id')).id;
  const connectionId = (await db('connections').first('id')).id;
  const budget = { calls: CALLS, windowMs: 3_600_000 };
  const chain = [
    await api(base, 'POST', '/api/grants', owner, { connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file'], budget }),
  ];
  for (let depth = 1; depth <= 3; depth += 1)
    chain.push(await api(base, 'POST', `/api/grants/${chain.at(-1).id}/attenuate`, world.agentToken, {}));
  const check = () =>
    api(base, 'POST', '/api/broker/check', world.brokerToken, {
      grantId: chain.at(-1).id,
      tool: 'repos.read_file',
      subjectToken: world.agentToken,
      args: {},
    });
  const redis = new Redis(REDIS_URL, { keyPrefix: REDIS_KEY_PREFIX });
  const usage = async () => {
    let bytes = 0;
    for (const grant of chain) bytes += Number(await redis.memory('USAGE', `{${chain[0].id}}:win:${grant.id}`, 'SAMPLES', '0'));
    return bytes;
  };
  try {
    await check();
    const one = await usage();
    for (let i = 1; i < CALLS; i += 50) await Promise.all(Array.from({ length: Math.min(50, CALLS - i) }, check));
    const all = await usage();
    return {
      calls: CALLS,
      levels: chain.length,
      bytesPerCallPerLevel: +((all - one) / ((CALLS - 1) * chain.length)).toFixed(1),
      totalBytes: all,
    };
  } finally {
    redis.disconnect();
  }
}

async function wasmEvaluationsPerSec(input) {
  const policy = await loadPolicy(readFileSync(path.join(root, 'build/policy/policy.wasm')));
  const check = policy.evaluate(input, 'broker/check/decision')[0].result;
  if (!check.allow) throw new Error(`the baseline input is denied: ${JSON.stringify(check)}`);
  let count = 0;
  const started = process.hrtime.bigint();
  const until = started + BigInt(WASM_S * 1e9);
  while (process.hrtime.bigint() < until) {
    for (let i = 0; i < 100; i += 1) policy.evaluate(input, 'broker/check/decision');
    count += 100;
  }
  return Math.round(count / (Number(process.hrtime.bigint() - started) / 1e9));
}

async function main() {
  const db = await benchDatabase();
  const results = {};
  try {
    const base = await startService({ DECISION_LOG: DECISION_LOG });
    const world = await seed(base, db);
    const body = JSON.stringify({
      grantId: world.leafId,
      tool: 'repos.read_file',
      subjectToken: world.agentToken,
      args: CHECK_ARGS,
    });
    const before = Number((await db('call_records').count({ n: '*' }))[0].n);
    const cpuBefore = serviceCpuMs(base);
    const service = await load('POST /api/broker/check', {
      url: `${base}/api/broker/check`,
      headers: { authorization: `Bearer ${world.brokerToken}`, 'content-type': 'application/json' },
      body,
    });
    results.service = summary(service);
    // CPU time of the service process per answered check: unlike req/s, it does not move with
    // whatever else the shared cores are doing (the load generator, Postgres, Redis).
    results.cpuMicrosPerCheck = Math.round((1000 * (serviceCpuMs(base) - cpuBefore)) / service.requests.total);
    const records = await db('call_records').select('outcome').count({ n: '*' }).groupBy('outcome');
    const byOutcome = Object.fromEntries(records.map((r) => [r.outcome, Number(r.n)]));
    results.recorded = { ...byOutcome, before };

    results.redisMemory = await redisBytesPerCall(base, db, world);

    // The example org packages enforced (working hours read the service's clock: UTC+14 at most
    // keeps a weekday noon somewhere; a denial would show as non-allowed records below).
    const orgModule = path.join(mkdtempSync(path.join(tmpdir(), 'bench-org-')), 'policy.wasm');
    execFileSync(process.execPath, [path.join(root, 'scripts/build-policy.mjs')], {
      env: { ...process.env, POLICY_BUILD_OUT: orgModule, ORG_POLICY_MODES: ORG_MODES },
      stdio: 'ignore',
    });
    const orgBase = await startService({
      DECISION_LOG: DECISION_LOG,
      POLICY_WASM_PATH: orgModule,
      POLICY_TIME_ZONE: workingZone(),
    });
    const orgWorld = await seed(orgBase, db, { resources: BENCH_RESOURCES, name: 'bench-org' });
    const orgBody = JSON.stringify({
      grantId: orgWorld.leafId,
      tool: 'repos.read_file',
      subjectToken: orgWorld.agentToken,
      args: CHECK_ARGS,
    });
    const probe = await api(orgBase, 'POST', '/api/broker/check', orgWorld.brokerToken, JSON.parse(orgBody));
    if (probe.decision !== 'allow') throw new Error(`the org-packages check is denied: ${JSON.stringify(probe)}`);
    // A third service logging no decision: what decision logs (written to stdout, read by nobody
    // here) cost the others.
    const unloggedBase = await startService({ DECISION_LOG: 'off' });
    const unloggedWorld = await seed(unloggedBase, db, { name: 'bench-unlogged' });
    const unloggedBody = JSON.stringify({
      grantId: unloggedWorld.leafId,
      tool: 'repos.read_file',
      subjectToken: unloggedWorld.agentToken,
      args: CHECK_ARGS,
    });

    // Alternating rounds, so the drift of a shared machine falls on every variant alike.
    const variants = [
      ['pairPlain', `POST /api/broker/check, DECISION_LOG=${DECISION_LOG}`, base, world.brokerToken, body],
      [
        'serviceOrg',
        'POST /api/broker/check, example org packages enforced, resources constrained',
        orgBase,
        orgWorld.brokerToken,
        orgBody,
      ],
      ['serviceUnlogged', 'POST /api/broker/check, DECISION_LOG=off', unloggedBase, unloggedWorld.brokerToken, unloggedBody],
    ];
    const runs = Object.fromEntries(variants.map(([key]) => [key, []]));
    // CPU time per check of each variant over all its rounds: the cost of what a variant adds,
    // steadier than req/s on cores shared with the load generator, Postgres and Redis.
    const cpu = Object.fromEntries(variants.map(([key]) => [key, { ms: 0, checks: 0 }]));
    for (let round = 1; round <= PAIR_ROUNDS; round += 1) {
      for (const [key, title, url, token, payload] of variants) {
        const cpuBefore = serviceCpuMs(url);
        const result = await load(`round ${round}: ${title}`, {
          url: `${url}/api/broker/check`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: payload,
          duration: PAIR_S,
        });
        cpu[key].ms += serviceCpuMs(url) - cpuBefore;
        cpu[key].checks += result.requests.total;
        runs[key].push(result);
      }
    }
    for (const [key] of variants) {
      results[key] = { ...meanSummary(runs[key]), cpuMicrosPerCheck: Math.round((1000 * cpu[key].ms) / cpu[key].checks) };
    }

    // A steady 1 000 checks/s: the latency a broker sees when the service is not saturated, with
    // decision logs on (the default) and off.
    results.rateLogged = await atFixedRate(`POST /api/broker/check, DECISION_LOG=${DECISION_LOG}`, {
      base,
      token: world.brokerToken,
      body,
    });
    // The same rate against the floor of a check (one Redis script and one Postgres commit behind a
    // bare HTTP server), and the disk's own fdatasync at that rate: what the machine alone costs.
    const floor = await startFloor(world.leafId);
    results.rateFloor = await atFixedRate('floor: bare HTTP server, one Redis script, one Postgres commit', {
      base: floor.base,
      token: 'none',
      body,
    });
    floor.stop();
    const dataDirectory = (await db.raw('show data_directory')).rows[0].data_directory;
    console.log(`disk: 8 kB write + fdatasync at ${RATE}/s, 5 s`);
    results.diskSync = diskSyncAtRate(5, dataDirectory);
    results.rateOff = await atFixedRate('POST /api/broker/check, DECISION_LOG=off', {
      base: unloggedBase,
      token: unloggedWorld.brokerToken,
      body: unloggedBody,
    });

    // Where the milliseconds go: the default service with its phases timed (scripts/phase-timer.cjs
    // prints the table when the service stops), at the same fixed rate.
    const phasedBase = await startService({ DECISION_LOG: 'all' }, ['--require', './scripts/phase-timer.cjs']);
    const phasedWorld = await seed(phasedBase, db, { name: 'bench-phased' });
    results.ratePhased = await atFixedRate(
      'DECISION_LOG=all, phases timed',
      {
        base: phasedBase,
        token: phasedWorld.brokerToken,
        body: JSON.stringify({
          grantId: phasedWorld.leafId,
          tool: 'repos.read_file',
          subjectToken: phasedWorld.agentToken,
          args: CHECK_ARGS,
        }),
      },
      // The table covers the measured run only, not the warm-up.
      () => signalService(phasedBase, 'SIGUSR2'),
    );
    await stopService(phasedBase);

    // Scale: the default service as one process, as WORKERS=2, and on a Redis Cluster, each
    // alone (the services above have done their part).
    for (const done of [base, orgBase, unloggedBase]) await stopService(done);
    const scaled = async (key, title, env) => {
      const scaledBase = await startService({ DECISION_LOG: 'all', ...env });
      const scaledWorld = await seed(scaledBase, db, { name: `bench-${key}` });
      const target = {
        base: scaledBase,
        token: scaledWorld.brokerToken,
        body: JSON.stringify({
          grantId: scaledWorld.leafId,
          tool: 'repos.read_file',
          subjectToken: scaledWorld.agentToken,
          args: CHECK_ARGS,
        }),
      };
      results[key] = summary(
        await load(title, {
          url: `${scaledBase}/api/broker/check`,
          headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
          body: target.body,
          duration: SCALE_S,
        }),
      );
      results[`${key}Rate`] = await atFixedRate(title, target);
      await stopService(scaledBase);
    };
    await scaled('workers1', 'WORKERS=1, DECISION_LOG=all', {});
    await scaled('workers2', 'WORKERS=2, DECISION_LOG=all', { WORKERS: '2' });
    const cluster = await startRedisCluster();
    try {
      await scaled('cluster', 'WORKERS=1 on a 3-master Redis Cluster, DECISION_LOG=all', { REDIS_CLUSTER_NODES: cluster.nodes });
    } finally {
      cluster.stop();
    }

    const agentId = (await db('agents').first('id')).id;
    const brokerId = (await db('brokers').where('name', 'bench-broker').first('id')).id;
    const input = await checkInputFor(db, world.leafId, agentId, brokerId);
    input.now_ms = Date.now();
    console.log(`in-process WASM: ${WASM_S} s`);
    results.wasmEvaluationsPerSec = await wasmEvaluationsPerSec(input);

    const opaPort = await freePort();
    start(path.join(root, '.tools/bin/opa'), [
      'run',
      '--server',
      '--addr',
      `127.0.0.1:${opaPort}`,
      '--log-level',
      'error',
      '--ignore',
      '*_test.rego',
      '--ignore',
      'schemas',
      'policies',
    ]);
    await waitFor(`http://127.0.0.1:${opaPort}/health`);
    const opa = await load('opa run --server: POST /v1/data/broker/check/decision', {
      url: `http://127.0.0.1:${opaPort}/v1/data/broker/check/decision`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input }),
    });
    results.opaRest = summary(opa);
  } finally {
    await finish(db);
  }
  report(results);
}

const ORG_MODES = ['protected_branches', 'repository_allowlist', 'working_hours'].map((p) => `broker.check.${p}=enforce`).join(',');

/** An IANA zone where it is a weekday, 09:00 to 18:00, now: the working-hours rule then allows. */
function workingZone() {
  for (const zone of Intl.supportedValuesOf('timeZone')) {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'short', hour: 'numeric', hourCycle: 'h23' })
        .formatToParts(Date.now())
        .map((p) => [p.type, p.value]),
    );
    if (!['Sat', 'Sun'].includes(parts.weekday) && Number(parts.hour) >= 10 && Number(parts.hour) < 17) return zone;
  }
  return 'UTC';
}

function report(r) {
  const allowed = r.recorded.pending ?? 0;
  const ratio = (a, b, digits = 2) => (a / b).toFixed(digits);
  console.log('\n=== broker check benchmark ===');
  console.log(`machine: ${machine()}`);
  console.log(
    `load: autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per target; chain depth 3 (4 grants); agent subjectToken; ` +
      `the service with DECISION_LOG=${DECISION_LOG} unless a row says otherwise`,
  );
  console.table({
    'service POST /api/broker/check': r.service,
    [`service, ${PAIR_ROUNDS} rounds of ${PAIR_S} s, alternating`]: r.pairPlain,
    [`service, org packages + resources, alternating`]: r.serviceOrg,
    [`service, DECISION_LOG=off, alternating`]: r.serviceUnlogged,
    'opa run --server (REST)': r.opaRest,
  });
  console.log(`in-process WASM evaluation of broker/check: ${r.wasmEvaluationsPerSec} evaluations/s (one core)`);
  console.log(`service CPU per check (user + system of its process, main run): ${r.cpuMicrosPerCheck} µs`);
  console.log(
    `\nfixed rate: ${RATE} checks/s evenly spaced, at most ${RATE_CONNECTIONS} connections, ${RATE_WARMUP_S} s warm-up + ${RATE_S} s ` +
      `(latency in ms from each request's due time; generatorLoopDelay*: the load generator's own stalls)`,
  );
  console.table({
    [`DECISION_LOG=${DECISION_LOG}`]: r.rateLogged,
    'floor: HTTP + Redis script + Postgres commit': r.rateFloor,
    'DECISION_LOG=off': r.rateOff,
    'DECISION_LOG=all, phases timed': r.ratePhased,
    'WORKERS=1': r.workers1Rate,
    'WORKERS=2': r.workers2Rate,
    'Redis Cluster (3 masters)': r.clusterRate,
  });
  const d = r.diskSync;
  console.log(
    `disk: 8 kB write + fdatasync at ${RATE}/s (a commit's wait): p50 ${d.p50} ms, p90 ${d.p90} ms, p99 ${d.p99} ms, max ${d.max} ms ` +
      `(same device as Postgres's data directory: ${d.samePostgresDevice}); ` +
      `service / floor at ${RATE}/s: p50 ${ratio(r.rateLogged.p50, r.rateFloor.p50)}, p99 ${ratio(r.rateLogged.p99, r.rateFloor.p99)}`,
  );
  console.log(`\nscale: ${CONNECTIONS} connections, ${SCALE_S} s each, DECISION_LOG=all`);
  console.table({ 'WORKERS=1': r.workers1, 'WORKERS=2': r.workers2, 'Redis Cluster (3 masters)': r.cluster });
  console.log(
    `targets: p99 at ${RATE}/s with decision logs = ${r.rateLogged.p99} ms (target <= 5; the floor's ${r.rateFloor.p99} ms, the disk's ${r.diskSync.p99} ms); ` +
      `throughput service (DECISION_LOG=${DECISION_LOG}) / opa REST = ${ratio(r.service.requestsPerSec, r.opaRest.requestsPerSec)} (target >= 1.5); ` +
      `WORKERS=2 / WORKERS=1 = ${ratio(r.workers2.requestsPerSec, r.workers1.requestsPerSec)}; ` +
      `Redis Cluster / one Redis = ${ratio(r.cluster.requestsPerSec, r.workers1.requestsPerSec)}`,
  );
  console.log(
    `ratios: service / opa REST = ${ratio(r.service.requestsPerSec, r.opaRest.requestsPerSec)}; ` +
      `service with DECISION_LOG=off / opa REST (alternating-round mean) = ${ratio(r.serviceUnlogged.requestsPerSec, r.opaRest.requestsPerSec)}; ` +
      `service / in-process WASM = ${ratio(r.service.requestsPerSec, r.wasmEvaluationsPerSec, 3)}; ` +
      `p99 service / opa REST = ${ratio(r.service.p99, Math.max(r.opaRest.p99, 0.001))}; ` +
      `service with org packages and resources / without (alternating rounds) = ${ratio(r.serviceOrg.requestsPerSec, r.pairPlain.requestsPerSec, 3)}; ` +
      `service with decision logs / without (alternating rounds) = ${ratio(r.pairPlain.requestsPerSec, r.serviceUnlogged.requestsPerSec, 3)}`,
  );
  console.log(
    `CPU per check, alternating rounds: DECISION_LOG=${DECISION_LOG} ${r.pairPlain.cpuMicrosPerCheck} µs; org packages + resources ` +
      `${r.serviceOrg.cpuMicrosPerCheck} µs (${ratio(r.serviceOrg.cpuMicrosPerCheck, r.pairPlain.cpuMicrosPerCheck, 3)}×); ` +
      `DECISION_LOG=off ${r.serviceUnlogged.cpuMicrosPerCheck} µs (decision logs cost ${ratio(r.pairPlain.cpuMicrosPerCheck, r.serviceUnlogged.cpuMicrosPerCheck, 3)}×)`,
  );
  // Steal is time the hypervisor kept the guest's cores from it: other guests, and on a virtual
  // machine also its own emulation of this guest's disk flushes (an fdatasync per commit; on the
  // machine of docs/broker-check.md, 1 000 flushes a second alone showed 7-10 % steal).
  const stolen = Object.entries(r)
    .filter(([, row]) => row?.stealPct >= STEAL_NOTICE_PCT)
    .map(([key, row]) => `${key} ${row.stealPct} %`);
  if (stolen.length > 0) {
    console.log(`steal >= ${STEAL_NOTICE_PCT} % of the cores' time (the hypervisor's, not the service's) during: ${stolen.join(', ')}`);
  }
  console.log(`call records: ${JSON.stringify(r.recorded)}; 2xx answers: ${r.service.ok2xx}`);
  const m = r.redisMemory;
  console.log(
    `redis memory: ${m.bytesPerCallPerLevel} bytes per allowed call per chain level (${m.calls} calls through ${m.levels} levels, exact windows: ${m.totalBytes} bytes)`,
  );
  // A check answers only once its record is durable, so records >= answers; the difference is
  // the calls still in flight when autocannon stopped counting (at most one per connection).
  const complete = allowed >= r.service.ok2xx && allowed - r.service.ok2xx <= CONNECTIONS && !r.recorded.denied;
  console.log(
    complete ? 'every allowed call is recorded (pending records >= 2xx answers, none denied)' : 'MISMATCH between answers and records',
  );
  if (!complete) process.exitCode = 1;
}

main().catch(async (error) => {
  console.error(error);
  killChildren();
  process.exit(1);
});
