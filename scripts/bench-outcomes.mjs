// What recording outcomes costs the service, per outcome, beside another build's service in the
// same run. Each service (this build's dist/src/main.js and each of BENCH_OUTCOMES_BASELINE's
// main.js, on one throwaway database) takes, in alternating rounds: checks sent straight to it at
// BENCH_OUTCOMES_RATE/s (each a pending call record), then the outcomes of those calls at the same
// rate, reported as the gateway reports them (POST /api/broker/outcomes, a batch every 20 ms). The
// service's CPU is read from /proc around each phase: CPU per check and CPU per outcome apart.
// Env: BENCH_OUTCOMES_RATE (200), BENCH_OUTCOMES_ROUNDS (3), BENCH_OUTCOMES_ROUND_S (8),
//      BENCH_OUTCOMES_BATCH_MS (20), BENCH_OUTCOMES_BASELINE (other builds' main.js, comma-separated),
//      BENCH_OUTCOMES_NODE_ARGS (`--cpu-prof --cpu-prof-dir=…`: this build's service only).
import path from 'node:path';
import {
  benchDatabase,
  finish,
  killChildren,
  machine,
  percentile,
  root,
  serviceCpuMs,
  startService,
  stopService,
} from './bench-harness.mjs';
import { seedEchoGrant } from './bench-world.mjs';

const RATE = Number(process.env.BENCH_OUTCOMES_RATE ?? 200);
const ROUNDS = Number(process.env.BENCH_OUTCOMES_ROUNDS ?? 3);
const ROUND_S = Number(process.env.BENCH_OUTCOMES_ROUND_S ?? 8);
const BATCH_MS = Number(process.env.BENCH_OUTCOMES_BATCH_MS ?? 20);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` sends at RATE/s, open loop; their results in order. */
async function openLoop(count, send) {
  const pending = [];
  const started = performance.now();
  for (let i = 0; i < count; i += 1) {
    const wait = started + (i * 1000) / RATE - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(send(i));
  }
  return Promise.all(pending);
}

async function checks(base, world, count) {
  const headers = { authorization: `Bearer ${world.brokerToken}`, 'content-type': 'application/json' };
  const body = (i) =>
    JSON.stringify({ grantId: world.grantId, tool: 'everything.echo', args: { message: `call ${i}` }, subjectToken: world.agentToken });
  const answers = await openLoop(count, (i) =>
    fetch(`${base}/api/broker/check`, { method: 'POST', headers, body: body(i) }).then((answer) => answer.json()),
  );
  return answers.filter((answer) => answer.decision === 'allow').map((answer) => answer.callId);
}

/** The outcomes of `callIds` reported in a batch every BATCH_MS, as many a batch as RATE/s gives. */
async function outcomes(base, world, callIds) {
  const headers = { authorization: `Bearer ${world.brokerToken}`, 'content-type': 'application/json' };
  const perBatch = Math.max(1, Math.round((RATE * BATCH_MS) / 1000));
  const statuses = new Map();
  const latencies = [];
  const sends = [];
  const started = performance.now();
  for (let at = 0; at < callIds.length; at += perBatch) {
    const wait = started + (at / perBatch) * BATCH_MS - performance.now();
    if (wait > 1) await sleep(wait);
    const batch = callIds.slice(at, at + perBatch).map((callId) => ({ callId, outcome: 'succeeded', durationMs: 1 }));
    const sent = performance.now();
    sends.push(
      fetch(`${base}/api/broker/outcomes`, { method: 'POST', headers, body: JSON.stringify({ outcomes: batch }) })
        .then((answer) => answer.json())
        .then((answer) => {
          latencies.push(performance.now() - sent);
          for (const { status } of answer.results ?? [{ status: `http ${answer.code ?? '?'}` }])
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }),
    );
  }
  await Promise.all(sends);
  return { statuses, latencies };
}

const db = await benchDatabase();
try {
  const baselines = process.env.BENCH_OUTCOMES_BASELINE?.split(',').filter(Boolean) ?? [];
  const nodeArgs = process.env.BENCH_OUTCOMES_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const services = [{ label: 'this build', base: await startService({}, nodeArgs) }];
  for (const main of baselines) services.push({ label: path.relative(root, main), base: await startService({}, [], main) });
  const world = await seedEchoGrant(services[0].base, db, 'outcomes');
  for (const service of services)
    Object.assign(service, { checkCpu: 0, outcomeCpu: 0, checks: 0, outcomes: 0, latencies: [], statuses: new Map() });
  // A warm-up round each, not counted.
  for (const service of services) await outcomes(service.base, world, await checks(service.base, world, RATE * 2));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const service of round % 2 ? [...services].reverse() : services) {
      let before = serviceCpuMs(service.base);
      const callIds = await checks(service.base, world, RATE * ROUND_S);
      service.checkCpu += serviceCpuMs(service.base) - before;
      service.checks += callIds.length;
      await sleep(200);
      before = serviceCpuMs(service.base);
      const reported = await outcomes(service.base, world, callIds);
      service.outcomeCpu += serviceCpuMs(service.base) - before;
      service.outcomes += callIds.length;
      service.latencies.push(...reported.latencies);
      for (const [status, n] of reported.statuses) service.statuses.set(status, (service.statuses.get(status) ?? 0) + n);
    }
  }
  console.log(`bench:outcomes, ${machine()}, ${RATE}/s, a batch every ${BATCH_MS} ms, ${ROUNDS} alternating rounds of ${ROUND_S} s`);
  console.log('| service | checks | CPU per check | outcomes | CPU per outcome | batch p50 | batch p99 | statuses |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const service of services) {
    const sorted = service.latencies.sort((a, b) => a - b);
    console.log(
      `| ${service.label} | ${service.checks} | ${((service.checkCpu * 1000) / service.checks).toFixed(0)} µs | ${service.outcomes} | ${((service.outcomeCpu * 1000) / service.outcomes).toFixed(0)} µs | ${percentile(sorted, 50).toFixed(2)} ms | ${percentile(sorted, 99).toFixed(2)} ms | ${[...service.statuses].map(([s, n]) => `${s} ${n}`).join(', ')} |`,
    );
  }
  for (const service of services) await stopService(service.base);
} finally {
  killChildren();
  await finish(db);
}
