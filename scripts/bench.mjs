// npm run bench: the broker check under load, beside two baselines, on this machine.
//   1. POST /api/broker/check on the built service (dist/src/main.js) against the local Postgres
//      (a throwaway database) and Redis (a throwaway key prefix), through a chain of depth 3
//      (root -> child -> grandchild -> great-grandchild), driven by autocannon;
//   2. the same broker/check entrypoint evaluated in-process by opa-wasm (evaluations/s);
//   3. `opa run --server` (the pinned .tools/bin/opa) evaluating it over REST under the same load,
//      in the alternating rounds of 1. (the throughput target is the median of its rounds' ratios);
//   4. the service with no decision logged (DECISION_LOG=off), alternating with 1., so the cost of
//      decision logs (on by default, and on in 1.) shows;
//   5. the service again, on a module with the three example org packages enforced
//      (ORG_POLICY_MODES) and a chain whose root constrains repositories, refs and paths, so
//      every check also extracts its resources from `args`;
//   5b. the service on a module with the example information_flow enforced (its private
//      repositories matching the checked one, so every check is labelled and reads its tree's
//      labels), alternating with 1.: what session rules cost a check, and the Redis bytes of a tree;
//   5c. 1. asked as Envoy's ext_authz over gRPC (scripts/bench-ext-authz.mjs), alternating with the
//      plain check on the same process: checks/s and CPU per check of each;
//   5d. the authorization server's token endpoint (refresh grants of connected hosts) at 50/s beside
//      the same service's /healthz at that rate (scripts/bench-oauth.mjs; also `npm run bench:oauth`);
//   6. 1. on the Node pinned in tools/node (the release line the Docker image runs), when
//      `scripts/ensure-deps.sh --with-test-node` has installed it, alternating with 1., untraced and
//      with every check traced (what tracing costs on the image's Node).
// Env: BENCH_CONNECTIONS (100), BENCH_DURATION_S (20), BENCH_WASM_S (5), BENCH_DECISION_LOG (all,
//      the service's default), BENCH_PAIR_ROUNDS (3) and BENCH_PAIR_S (10): alternating rounds of
//      1., 4., 5. and 6., BENCH_PAIR_WARMUP_S (5): each of their variants' uncounted load before
//      the first round, BENCH_RATE (1000), BENCH_RATE_CONNECTIONS (20), BENCH_RATE_S (15) and
//      BENCH_RATE_WARMUP_S (3): the fixed-rate runs,
//      BENCH_SCALE_S (10): WORKERS=1, WORKERS=2 and Redis Cluster at full load (BENCH_SCALE=off skips them),
//      BENCH_POOL_MAX (8): each service's DATABASE_POOL_MAX, so that all of them fit in Postgres's connections,
//      BENCH_DATABASE_BASE_URL (postgres://postgres@127.0.0.1:5432/), REDIS_URL,
//      BENCH_SERVICE_NODE_ARGS (the services' node flags, by default those they ship with: `none` for
//      V8's defaults), BENCH_NODE_ARGS (extra node flags for the services, e.g. --trace-gc-nvp) and
//      BENCH_SERVICE_STDOUT (a file the services' stdout is appended to: decision logs and V8
//      traces; by default it is discarded).
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  api,
  benchDatabase,
  finish,
  freePort,
  killChildren,
  pinnedNode,
  processCpuMs,
  require,
  root,
  start,
  serviceCpuMs,
  signalService,
  startService as startHarnessService,
  stopService,
  waitFor,
} from './bench-harness.mjs';
import { extAuthzPair } from './bench-ext-authz.mjs';
import { oauthLines, oauthTokenEndpoint } from './bench-oauth.mjs';
import { refusalTally } from './bench-refusals.mjs';
import { meanSummary, report, summary } from './bench-report.mjs';
import { RATE, atFixedRate, cpuTimes, diskSyncAtRate, machineShares, startFloor, startRedisCluster } from './bench-scale.mjs';
import { BENCH_RESOURCES, buildFlowPolicy, checkBody, checkInputFor, redisBytesPerCall, redisBytesPerTree, seed } from './bench-world.mjs';

const { trailFootprint, trailRecordsByOutcome } = require(path.join(root, 'dist/src/trail/repositories/days.js'));

const autocannon = require('autocannon');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
const WASM_S = Number(process.env.BENCH_WASM_S ?? 5);
const PAIR_ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 3);
const PAIR_S = Number(process.env.BENCH_PAIR_S ?? 10);
const PAIR_WARMUP_S = Number(process.env.BENCH_PAIR_WARMUP_S ?? 5);
const SCALE_S = Number(process.env.BENCH_SCALE_S ?? 10);
const SCALE = process.env.BENCH_SCALE !== 'off';
/** The main run's and the org run's decision logging: the service's default unless told. */
const DECISION_LOG = process.env.BENCH_DECISION_LOG ?? 'all';
/**
 * Each service's Postgres pool. A saturated service opens its whole pool (the default 20) though
 * its group commit keeps about one statement in flight, and a pool keeps its connections 30 s
 * after its round: the alternating variants together then went past Postgres's max_connections
 * (100, shared with whatever else runs), and their checks answered 503 dependency_unavailable
 * ("too many clients") for a limit the bench itself had hit.
 */
const POOL_MAX = process.env.BENCH_POOL_MAX ?? '8';
const startService = (env = {}, ...rest) => startHarnessService({ DATABASE_POOL_MAX: POOL_MAX, ...env }, ...rest);

function load(title, options) {
  return new Promise((resolve, reject) => {
    const before = cpuTimes();
    // Every answer passes through the tally, which keeps the non-2xx ones by status and problem code.
    const refusals = refusalTally();
    const instance = autocannon(
      { connections: CONNECTIONS, duration: DURATION_S, method: 'POST', ...options, requests: [{ onResponse: refusals.count }] },
      (error, result) =>
        error ? reject(error) : resolve({ ...result, machine: machineShares(before, cpuTimes()), refusals: refusals.counts }),
    );
    instance.on('error', reject);
    console.log(`load: ${title} (${CONNECTIONS} connections, ${options.duration ?? DURATION_S} s)`);
  });
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
    // The default service also serves Envoy's ext_authz over gRPC, so both are measured on one process.
    const grpcPort = await freePort();
    const base = await startService({ DECISION_LOG: DECISION_LOG, EXT_AUTHZ_GRPC_PORT: String(grpcPort) });
    const world = await seed(base, db);
    const body = checkBody(world);
    // `opa run --server` on the same policy and the first world's check input, started now so that
    // it takes its turn in the alternating rounds below.
    const agentId = (await db('agents').first('id')).id;
    const brokerId = (await db('brokers').where('name', 'bench-broker').first('id')).id;
    const input = await checkInputFor(db, world.leafId, agentId, brokerId);
    input.now_ms = Date.now();
    const opa = await startOpa();
    const before = Object.values(await trailRecordsByOutcome(db)).reduce((sum, n) => sum + n, 0);
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
    results.recorded = { ...(await trailRecordsByOutcome(db)), before };

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
    const orgBody = checkBody(orgWorld);
    const probe = await api(orgBase, 'POST', '/api/broker/check', orgWorld.brokerToken, JSON.parse(orgBody));
    if (probe.decision !== 'allow') throw new Error(`the org-packages check is denied: ${JSON.stringify(probe)}`);
    // information_flow enforced: every check is labelled `private_data` and reads the tree's labels.
    const flowPolicy = buildFlowPolicy();
    const flowBase = await startService({ DECISION_LOG: DECISION_LOG, POLICY_WASM_PATH: flowPolicy });
    const flowWorld = await seed(flowBase, db, { name: 'bench-flow' });
    const flowBody = checkBody(flowWorld);
    const flowProbe = await api(flowBase, 'POST', '/api/broker/check', flowWorld.brokerToken, JSON.parse(flowBody));
    if (flowProbe.decision !== 'allow') throw new Error(`the information-flow check is denied: ${JSON.stringify(flowProbe)}`);
    // A third service logging no decision: what decision logs (written to stdout, read by nobody
    // here) cost the others.
    const unloggedBase = await startService({ DECISION_LOG: 'off' });
    const unloggedWorld = await seed(unloggedBase, db, { name: 'bench-unlogged' });
    const unloggedBody = checkBody(unloggedWorld);
    // A fourth with no Merkle tree over the trail (TRAIL_TREE=off): what the tree costs a check.
    const untreedBase = await startService({ DECISION_LOG: DECISION_LOG, TRAIL_TREE: 'off' });
    const untreedWorld = await seed(untreedBase, db, { name: 'bench-untreed' });
    // The default service on the pinned Node (the line the Docker image runs), beside the same build
    // on this machine's Node: what a deployment from the image gets.
    const imageNode = pinnedNode();
    const imageNodeBase = imageNode && (await startService({ DECISION_LOG: DECISION_LOG, ...imageNode.env }));
    const imageNodeWorld = imageNodeBase && (await seed(imageNodeBase, db, { name: 'bench-image-node' }));
    results.imageNodeVersion = imageNode?.version;

    // Every check traced and exported over OTLP/HTTP (to a sink here that takes and drops each
    // batch): what OpenTelemetry at full sampling costs, beside the default service where it is off.
    const otlpSink = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise((resolve) => otlpSink.listen(0, '127.0.0.1', resolve));
    const tracedBase = await startService({
      DECISION_LOG: DECISION_LOG,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpSink.address().port}`,
    });
    const tracedWorld = await seed(tracedBase, db, { name: 'bench-traced' });
    const otlpEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpSink.address().port}` };
    const imageNodeTracedBase = imageNode && (await startService({ DECISION_LOG: DECISION_LOG, ...imageNode.env, ...otlpEnv }));
    const imageNodeTracedWorld = imageNodeTracedBase && (await seed(imageNodeTracedBase, db, { name: 'bench-image-node-traced' }));

    // Alternating rounds, so the drift of a shared machine falls on every variant alike.
    const check = (key, title, url, token, payload) => ({
      key,
      title,
      url: `${url}/api/broker/check`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: payload,
      cpuMs: () => serviceCpuMs(url),
    });
    const variants = [
      check('pairPlain', `POST /api/broker/check, DECISION_LOG=${DECISION_LOG}`, base, world.brokerToken, body),
      check(
        'serviceOrg',
        'POST /api/broker/check, example org packages enforced, resources constrained',
        orgBase,
        orgWorld.brokerToken,
        orgBody,
      ),
      check(
        'serviceInformationFlow',
        'POST /api/broker/check, information_flow enforced, every check labelled',
        flowBase,
        flowWorld.brokerToken,
        flowBody,
      ),
      check('serviceUnlogged', 'POST /api/broker/check, DECISION_LOG=off', unloggedBase, unloggedWorld.brokerToken, unloggedBody),
      check(
        'serviceTraced',
        'POST /api/broker/check, every check traced (OTLP)',
        tracedBase,
        tracedWorld.brokerToken,
        checkBody(tracedWorld),
      ),
      check('serviceUntreed', 'POST /api/broker/check, TRAIL_TREE=off', untreedBase, untreedWorld.brokerToken, checkBody(untreedWorld)),
      ...(imageNodeBase
        ? [
            check(
              'serviceImageNode',
              `POST /api/broker/check on Node ${imageNode.version}`,
              imageNodeBase,
              imageNodeWorld.brokerToken,
              checkBody(imageNodeWorld),
            ),
            check(
              'serviceImageNodeTraced',
              `POST /api/broker/check on Node ${imageNode.version}, every check traced (OTLP)`,
              imageNodeTracedBase,
              imageNodeTracedWorld.brokerToken,
              checkBody(imageNodeTracedWorld),
            ),
          ]
        : []),
      {
        key: 'opaRest',
        title: 'opa run --server: POST /v1/data/broker/check/decision',
        url: `${opa.base}/v1/data/broker/check/decision`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input }),
        cpuMs: opa.cpuMs,
      },
    ];
    // Every variant warmed up first, uncounted: a service started just before its first round
    // (information_flow's, say) would otherwise count its JIT's warm-up in its CPU per check, where
    // the default service, loaded above already, does not, and the ratios would judge the warm-up.
    for (const { title, url, headers, body: payload } of variants) {
      if (PAIR_WARMUP_S > 0) await load(`warm-up: ${title}`, { url, headers, body: payload, duration: PAIR_WARMUP_S });
    }
    const runs = Object.fromEntries(variants.map(({ key }) => [key, []]));
    // CPU time per check of each variant over all its rounds: the cost of what a variant adds,
    // steadier than req/s on cores shared with the load generator, Postgres and Redis.
    const cpu = Object.fromEntries(variants.map(({ key }) => [key, { ms: 0, checks: 0 }]));
    const roundsCpu = Object.fromEntries(variants.map(({ key }) => [key, []]));
    for (let round = 1; round <= PAIR_ROUNDS; round += 1) {
      // Each round in another order (roundOrder), so that no variant always runs first, right
      // after `opa run --server` saturated every core, or always in the same place of the round.
      for (const { key, title, url, headers, body: payload, cpuMs } of roundOrder(variants, round)) {
        const cpuBefore = cpuMs();
        const result = await load(`round ${round}: ${title}`, { url, headers, body: payload, duration: PAIR_S });
        const ms = cpuMs() - cpuBefore;
        cpu[key].ms += ms;
        cpu[key].checks += result.requests.total;
        roundsCpu[key].push(Math.round((1000 * ms) / result.requests.total));
        runs[key].push(result);
      }
    }
    for (const { key } of variants) {
      results[key] = {
        ...meanSummary(runs[key]),
        cpuMicrosPerCheck: Math.round((1000 * cpu[key].ms) / cpu[key].checks),
        // Each round's checks/s: the throughput target takes their median, which one disturbed round cannot move.
        roundsPerSec: runs[key].map((run) => Math.round(run.requests.average)),
        // Each round's CPU per check, in the order the rounds ran: a variant heavy in one place of a round shows here.
        roundsCpuMicrosPerCheck: roundsCpu[key],
      };
    }
    opa.stop();
    // The same check asked as Envoy's ext_authz over gRPC (MCP metadata), alternating with the plain check.
    results.extAuthz = await extAuthzPair({ base, grpcPort, world });
    // Its part is done: it would only idle beside the fixed-rate runs (and hold Postgres connections).
    if (imageNodeBase) await stopService(imageNodeBase);
    if (imageNodeTracedBase) await stopService(imageNodeTracedBase);
    await stopService(tracedBase);
    otlpSink.close();
    results.flowTree = await redisBytesPerTree(db, flowWorld.leafId);
    results.plainTree = await redisBytesPerTree(db, world.leafId);
    await stopService(flowBase);

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
    results.rateFloor = await atFixedRate('reference: bare HTTP server, one Redis script, one Postgres commit', {
      base: floor.base,
      token: 'none',
      body,
    });
    floor.stop();
    // The floor proper: the same server with the rows of concurrent requests group-committed, as the service does.
    const groupedFloor = await startFloor(world.leafId, 'grouped');
    results.rateGroupedFloor = await atFixedRate('floor: bare HTTP server, one Redis script, a group-committed row', {
      base: groupedFloor.base,
      token: 'none',
      body,
    });
    groupedFloor.stop();
    const dataDirectory = (await db.raw('show data_directory')).rows[0].data_directory;
    console.log(`disk: 8 kB write + fdatasync at ${RATE}/s, 5 s`);
    results.diskSync = diskSyncAtRate(5, dataDirectory);
    results.rateOff = await atFixedRate('POST /api/broker/check, DECISION_LOG=off', {
      base: unloggedBase,
      token: unloggedWorld.brokerToken,
      body: unloggedBody,
    });

    // Where the milliseconds go: the default service with its check's stages timed (TRACE_STAGES
    // writes the table when the service stops), at the same fixed rate.
    const phasedBase = await startService({ DECISION_LOG: 'all', TRACE_STAGES: 'true' });
    const phasedWorld = await seed(phasedBase, db, { name: 'bench-phased' });
    results.ratePhased = await atFixedRate(
      'DECISION_LOG=all, phases timed',
      {
        base: phasedBase,
        token: phasedWorld.brokerToken,
        body: checkBody(phasedWorld),
      },
      // The table covers the measured run only, not the warm-up.
      () => signalService(phasedBase, 'SIGUSR2'),
    );
    await stopService(phasedBase);

    // Scale: the default service as one process, as WORKERS=2, and on a Redis Cluster, each
    // alone (the services above have done their part).
    for (const done of [base, orgBase, unloggedBase, untreedBase]) await stopService(done);
    const scaled = async (key, title, env) => {
      const scaledBase = await startService({ DECISION_LOG: 'all', ...env });
      const scaledWorld = await seed(scaledBase, db, { name: `bench-${key}` });
      const target = {
        base: scaledBase,
        token: scaledWorld.brokerToken,
        body: checkBody(scaledWorld),
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
    if (SCALE) {
      await scaled('workers1', 'WORKERS=1, DECISION_LOG=all', {});
      await scaled('workers2', 'WORKERS=2, DECISION_LOG=all', { WORKERS: '2' });
      const cluster = await startRedisCluster();
      try {
        await scaled('cluster', 'WORKERS=1 on a 3-master Redis Cluster, DECISION_LOG=all', { REDIS_CLUSTER_NODES: cluster.nodes });
      } finally {
        cluster.stop();
      }
    }

    console.log(`in-process WASM: ${WASM_S} s`);
    results.wasmEvaluationsPerSec = await wasmEvaluationsPerSec(input);

    // The authorization server's token endpoint under the steady state of connected hosts (scripts/bench-oauth.mjs).
    results.oauth = await oauthTokenEndpoint(db);
    // What the call trail costs on disk after all the runs above: every partition, indexes included.
    results.trail = await trailFootprint(db);
  } finally {
    await finish(db);
  }
  report(results, { CONNECTIONS, DURATION_S, DECISION_LOG, PAIR_ROUNDS, PAIR_S, SCALE_S });
  console.log(`\n${oauthLines(results.oauth).join('\n')}`);
}

/** `opa run --server` (the pinned binary) on the policies, on a free port; its CPU time read from /proc. */
async function startOpa() {
  const port = await freePort();
  const child = start(path.join(root, '.tools/bin/opa'), [
    'run',
    '--server',
    '--addr',
    `127.0.0.1:${port}`,
    '--log-level',
    'error',
    '--ignore',
    '*_test.rego',
    '--ignore',
    'schemas',
    'policies',
  ]);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/health`);
  return { base, cpuMs: () => processCpuMs(child.pid), stop: () => child.kill('SIGTERM') };
}

/**
 * The order of the alternating round `round` (from 1): the reference (`opa run --server`, the last
 * variant) first, then the service variants rotated by a share of their number each round, so the
 * variant that runs right after the reference saturated every core, and the round's first and
 * last places, change from round to round.
 */
function roundOrder(variants, round) {
  const reference = variants.at(-1);
  const services = variants.slice(0, -1);
  const step = Math.max(1, Math.floor(services.length / PAIR_ROUNDS));
  const start = ((round - 1) * step) % services.length;
  return [reference, ...services.slice(start), ...services.slice(0, start)];
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

main().catch(async (error) => {
  console.error(error);
  killChildren();
  process.exit(1);
});
