// npm run bench:gateway: what the MCP gateway adds to a tool call, measured beside the same call
// made straight to the upstream, in the same run.
//   - the built service (dist/src/main.js) on a throwaway database and Redis key prefix, with a pod,
//     an installed agent, a broker and a grant on `everything.echo` (a budget never reached);
//   - the MCP project's server-everything over streamable HTTP as the upstream (a child process);
//   - the built gateway (dist/gateway/src/main.js) as its own process, listening for agents, in
//     front of that upstream;
//   - one MCP SDK client straight to the upstream and one through the gateway (the agent's token
//     and grant), each calling `echo` at BENCH_GATEWAY_RATE calls/s (open loop: a call is sent on
//     time whether or not the previous one answered), in alternating rounds so that both see the
//     same machine.
// Prints p50/p90/p99 of each path, of the gateway's check sent straight to the service at the same
// rate, and what the gateway adds beyond the upstream's call and that check (its HTTP hops, the
// argument validation, the outcome report), and the CPU per call of the gateway process and of the
// service.
// Beside the gateway, in the same rounds, the floor: a bare Node reverse proxy making the same check
// and forwarding the call (./bench-gateway-floor.mjs), what any Node hop costs on this machine; the
// gateway's added latency is read against the floor's too.
// BENCH_GATEWAY_OAUTH=1 adds a second client to the same gateway process: an MCP host with an OAuth
// access token (CONTRACT §20: registered, consented through the consent endpoints as the pod's
// owner, a child grant of the same grant), in the same alternating rounds, so the gateway's CPU
// per call over an access token sits beside the runtime token's.
// Env: BENCH_GATEWAY_RATE (200), BENCH_GATEWAY_ROUNDS (3), BENCH_GATEWAY_ROUND_S (10),
//      BENCH_GATEWAY_WARMUP_S (3), BENCH_GATEWAY_BASELINE (other builds' gateway main.js, comma-
//      separated, each measured in the same alternating rounds), BENCH_GATEWAY_NODE_ARGS (`--cpu-prof`, say),
//      BENCH_GATEWAY_FLOOR (0: no floor; outcomes: a second floor reporting outcomes too), plus the
//      service's (BENCH_DATABASE_BASE_URL, REDIS_URL).
import { execFileSync, spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { connect } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  benchDatabase,
  finish,
  freePort,
  killChildren,
  machine,
  percentile,
  require,
  root,
  serviceCpuMs,
  start,
  startService,
  waitFor,
} from './bench-harness.mjs';
import { seedEchoGrant } from './bench-world.mjs';
import { accessToken } from './bench-gateway-oauth.mjs';
import { stageRows, stagesOf, startStageCollector } from './bench-gateway-stages.mjs';

// The SDK's client aborts all its requests with one signal: a saturated round holds thousands at once.
setMaxListeners(100_000);
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const RATE = Number(process.env.BENCH_GATEWAY_RATE ?? 200);
const ROUNDS = Number(process.env.BENCH_GATEWAY_ROUNDS ?? 3);
const ROUND_S = Number(process.env.BENCH_GATEWAY_ROUND_S ?? 10);
const WARMUP_S = Number(process.env.BENCH_GATEWAY_WARMUP_S ?? 3);
const OAUTH = process.env.BENCH_GATEWAY_OAUTH === '1';
const { registerGatewayResource } = require(path.join(root, 'dist/src/oauth/resources.js'));
const IDLE_S = 5;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
const EVERYTHING = path.join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const LOOPBACK_LISTEN = path.join(root, 'test/gateway/support/loopback-listen.cjs');
// BENCH_GATEWAY_FLOOR=0 leaves out the bare Node proxy (./bench-gateway-floor.mjs) measured beside the gateway.
const FLOOR = process.env.BENCH_GATEWAY_FLOOR !== '0';
// BENCH_GATEWAY_STAGES=1: the gateway under test (not a baseline) traces every call to a collector here (./bench-gateway-stages.mjs).
const STAGES = process.env.BENCH_GATEWAY_STAGES === '1';

if (!existsSync(path.join(root, 'dist/gateway/src/main.js'))) throw new Error('run `npm run build` first (dist/gateway is missing)');

/** CPU time (user + system) of a process so far, in ms, from /proc. */
function processCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

async function startEverything() {
  const child = spawn(process.execPath, ['-r', LOOPBACK_LISTEN, EVERYTHING, 'streamableHttp'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let seen = '';
    child.stderr.on('data', (chunk) => {
      seen += chunk;
      const match = /LISTENING (\d+)/.exec(seen);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  child.stderr.resume();
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

async function client(url, headers = {}) {
  const agent = new Client({ name: 'bench', version: '1' });
  await agent.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return agent;
}

/** `seconds` of calls at RATE/s, open loop; the latencies (ms) of those that answered, and the failures. */
async function atRate(agent, seconds) {
  return openLoop(seconds, (i) =>
    agent.callTool({ name: 'echo', arguments: { message: `call ${i}` } }).then(
      (result) => !result.isError,
      () => false,
    ),
  );
}

/**
 * The check the gateway makes for each call (the agent's token as its subject), sent straight to
 * the service at the same rate: the part of a call through the gateway that is the grant broker's.
 */
async function checksAtRate(base, world, seconds) {
  const headers = { authorization: `Bearer ${world.brokerToken}`, 'content-type': 'application/json' };
  return openLoop(seconds, (i) =>
    fetch(`${base}/api/broker/check`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        grantId: world.grantId,
        tool: 'everything.echo',
        args: { message: `call ${i}` },
        subjectToken: world.agentToken,
      }),
    }).then(
      async (answer) => answer.ok && (await answer.json()).decision === 'allow',
      () => false,
    ),
  );
}

async function openLoop(seconds, send) {
  const latencies = [];
  let failures = 0;
  const pending = [];
  const interval = 1000 / RATE;
  const started = performance.now();
  for (let i = 0; i < seconds * RATE; i += 1) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const sent = performance.now();
    pending.push(send(i).then((ok) => (ok ? latencies.push(performance.now() - sent) : (failures += 1))));
  }
  await Promise.all(pending);
  return { latencies, failures, seconds: (performance.now() - started) / 1000 };
}

const stats = (latencies) => {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
};
const ms = (value) => `${value.toFixed(2)} ms`;

/**
 * A gateway process from `main` (a built dist/…/main.js) in front of the upstream, and an agent
 * connected through it with its runtime token (with BENCH_GATEWAY_OAUTH=1, and a host with an
 * access token: a second path through the same process).
 */
async function startGateway(label, main, base, world, everything, folder, db, env = {}) {
  const port = await freePort();
  const configFile = path.join(folder, `gateway-${port}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      brokerUrl: base,
      brokerTokenEnv: 'GATEWAY_BROKER_TOKEN',
      upstream: { url: everything.url },
      tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
      listen: { port, host: '127.0.0.1' },
    }),
  );
  const nodeArgs = process.env.BENCH_GATEWAY_NODE_ARGS ? process.env.BENCH_GATEWAY_NODE_ARGS.split(' ') : [];
  const child = start('node', [...nodeArgs, main, '--config', configFile], { GATEWAY_BROKER_TOKEN: world.brokerToken, ...env });
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitFor(url.replace('/mcp', '/healthz')).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const agent = await client(url, { Authorization: `Bearer ${world.agentToken}`, 'Grant-Id': world.grantId });
  const paths = [
    { label: OAUTH ? `${label} (runtime token)` : label, child, agent, latencies: [], cpu: 0, serviceCpu: 0, calls: 0, idleMsPerS: 0 },
  ];
  if (OAUTH) {
    await registerGatewayResource(db, world.brokerId, url);
    const host = await client(url, { Authorization: `Bearer ${await accessToken(base, world, url)}` });
    paths.push({
      label: `${label} (OAuth access token)`,
      child,
      agent: host,
      latencies: [],
      cpu: 0,
      serviceCpu: 0,
      calls: 0,
      idleMsPerS: 0,
    });
  }
  return paths;
}

/**
 * The floor: a bare Node reverse proxy (./bench-gateway-floor.mjs) doing the check and the upstream
 * call of each tools/call with nothing else, an agent connected through it as through the gateway.
 */
async function startFloor(base, world, everything, outcomes = false) {
  const port = await freePort();
  const script = path.join(root, 'scripts/bench-gateway-floor.mjs');
  const args = [script, String(port), everything.url, base, 'everything.echo', ...(outcomes ? ['outcomes'] : [])];
  const child = start('node', args, { FLOOR_BROKER_TOKEN: world.brokerToken });
  // Listening once a connection is taken: on a busy machine the proxy may take more than a second to start.
  for (let i = 0; i < 100 && !(await accepts(port)); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
  const agent = await client(`http://127.0.0.1:${port}/mcp`, { Authorization: `Bearer ${world.agentToken}`, 'Grant-Id': world.grantId });
  const label = `through a bare Node proxy (floor${outcomes ? ', outcomes batched as the gateway does' : ''})`;
  return { label, child, agent, latencies: [], cpu: 0, serviceCpu: 0, calls: 0, idleMsPerS: 0 };
}

/** Whether something on this machine accepts a TCP connection on `port`. */
function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(true) || socket.destroy());
    socket.once('error', () => resolve(false));
  });
}

async function main() {
  const db = await benchDatabase();
  try {
    const base = await startService();
    const world = await seedEchoGrant(base, db, 'gateway');
    const everything = await startEverything();
    const folder = mkdtempSync(path.join(tmpdir(), 'bench-gateway-'));
    // BENCH_GATEWAY_BASELINE: another build's main.js (an earlier commit's gateway), measured in the same rounds.
    const builds = [['through the gateway, checked', 'dist/gateway/src/main.js']];
    // Several, comma-separated: each its own path (`baseline 1`, `baseline 2`, …).
    const baselines = process.env.BENCH_GATEWAY_BASELINE?.split(',').filter(Boolean) ?? [];
    baselines.forEach((main, i) => builds.push([`through the baseline gateway${baselines.length > 1 ? ` ${i + 1}` : ''}`, main]));
    const gateways = [];
    const collector = STAGES ? await startStageCollector() : undefined;
    for (const [label, main] of builds) {
      const env = collector && main === builds[0][1] ? collector.env : {};
      gateways.push(...(await startGateway(label, main, base, world, everything, folder, db, env)));
    }
    if (FLOOR) gateways.push(await startFloor(base, world, everything));
    // BENCH_GATEWAY_FLOOR=outcomes: a second floor that also reports each call's outcome, in batches.
    if (process.env.BENCH_GATEWAY_FLOOR === 'outcomes') gateways.push(await startFloor(base, world, everything, true));
    const direct = await client(everything.url);

    console.log(
      `machine: ${machine()}; bench pid ${process.pid}, gateway pids ${[...new Set(gateways.map((g) => g.child.pid))].join(', ')}`,
    );
    console.log(`warm-up: ${WARMUP_S} s each path at ${RATE} calls/s`);
    await atRate(direct, WARMUP_S);
    for (const gateway of gateways) await atRate(gateway.agent, WARMUP_S);

    // What each gateway burns with no call at all (its sessions, timers, the upstream's open stream),
    // so that the CPU per call below counts only the calls.
    // (Paths through one process share its idle figure.)
    const idleBefore = gateways.map((g) => processCpuMs(g.child.pid));
    await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
    gateways.forEach((g, i) => (g.idleMsPerS = (processCpuMs(g.child.pid) - idleBefore[i]) / IDLE_S));
    collector?.take();
    console.log(`gateway idle: ${gateways.map((g) => `${g.idleMsPerS.toFixed(1)}`).join(' / ')} ms of CPU per second`);

    const straightAll = [];
    const checksAll = [];
    let failures = 0;
    for (let round = 1; round <= ROUNDS; round += 1) {
      const straight = await atRate(direct, ROUND_S);
      failures += straight.failures;
      straightAll.push(...straight.latencies);
      const checks = await checksAtRate(base, world, ROUND_S);
      failures += checks.failures;
      checksAll.push(...checks.latencies);
      const line = [
        `round ${round}: direct p50 ${ms(stats(straight.latencies).p50)} p99 ${ms(stats(straight.latencies).p99)}`,
        `check alone p50 ${ms(stats(checks.latencies).p50)} p99 ${ms(stats(checks.latencies).p99)}`,
      ];
      // Every other round in the opposite order, so that no path always follows the same one.
      for (const gateway of round % 2 ? gateways : [...gateways].reverse()) {
        const [gatewayBefore, serviceBefore] = [processCpuMs(gateway.child.pid), serviceCpuMs(base)];
        const gated = await atRate(gateway.agent, ROUND_S);
        gateway.cpu += processCpuMs(gateway.child.pid) - gatewayBefore - gateway.idleMsPerS * gated.seconds;
        gateway.serviceCpu += serviceCpuMs(base) - serviceBefore;
        gateway.calls += gated.latencies.length;
        gateway.latencies.push(...gated.latencies);
        failures += gated.failures;
        const b = stats(gated.latencies);
        const roundCpu = processCpuMs(gateway.child.pid) - gatewayBefore - gateway.idleMsPerS * gated.seconds;
        const roundService = serviceCpuMs(base) - serviceBefore;
        line.push(
          `${gateway.label} p50 ${ms(b.p50)} p99 ${ms(b.p99)}, CPU per call ${((1000 * roundCpu) / gated.latencies.length).toFixed(0)} µs ` +
            `(service ${((1000 * roundService) / gated.latencies.length).toFixed(0)} µs)`,
        );
      }
      console.log(line.join(' | '));
    }
    const a = stats(straightAll);
    console.log(`\n${RATE} calls/s, ${ROUNDS} alternating rounds of ${ROUND_S} s per path; ${failures} failed calls`);
    console.log('| path | calls | p50 | p90 | p99 | p99 ÷ direct p99 | gateway CPU per call | service CPU per call (check + outcome) |');
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
    console.log(`| straight to server-everything | ${a.n} | ${ms(a.p50)} | ${ms(a.p90)} | ${ms(a.p99)} | 1 | | |`);
    const c = stats(checksAll);
    console.log(
      `| the same check straight to the service | ${c.n} | ${ms(c.p50)} | ${ms(c.p90)} | ${ms(c.p99)} | ${(c.p99 / a.p99).toFixed(1)} | | |`,
    );
    for (const gateway of gateways) {
      const b = stats(gateway.latencies);
      const perCall = (total) => `${((total / gateway.calls) * 1000).toFixed(0)} µs`;
      console.log(
        `| ${gateway.label} | ${b.n} | ${ms(b.p50)} | ${ms(b.p90)} | ${ms(b.p99)} | ${(b.p99 / a.p99).toFixed(1)} | ${perCall(gateway.cpu)} | ${perCall(gateway.serviceCpu)} |`,
      );
    }
    console.log("(gateway CPU: its idle CPU taken out; the service CPU is all of its CPU during the path's rounds)");
    for (const gateway of gateways) {
      // What the gateway itself adds: beyond the upstream's call and the check it waits for (target p50 ≤ 1.5 ms; p99 ≤ 3 × direct).
      const b = stats(gateway.latencies);
      console.log(
        `${gateway.label}: added p50 ${ms(b.p50 - a.p50 - c.p50)} (through − straight − check alone; target ≤ 1.5 ms), ` +
          `p99 ÷ direct p99 ${(b.p99 / a.p99).toFixed(1)} (target ≤ 3)`,
      );
    }
    if (collector) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      console.log(
        `\n${gateways[0].label}, each call's stages from its spans:\n${stageRows(stagesOf(collector.take()), gateways[0].latencies)}`,
      );
      await collector.close();
    }
    if (OAUTH) {
      for (let i = 0; i + 1 < gateways.length; i += 2) {
        const [runtime, oauth] = [gateways[i], gateways[i + 1]];
        const ratio = oauth.cpu / oauth.calls / (runtime.cpu / runtime.calls);
        console.log(`gateway CPU per call, OAuth access token ÷ runtime token: ${ratio.toFixed(3)} (target ≤ 1.05)`);
      }
    }
    await direct.close().catch(() => undefined);
    for (const gateway of gateways) await gateway.agent.close().catch(() => undefined);
    for (const gateway of gateways) {
      if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) continue;
      // The gateway ends on its own SIGTERM, so that a --cpu-prof given in BENCH_GATEWAY_NODE_ARGS is written.
      const ended = new Promise((resolve) => gateway.child.once('exit', resolve));
      gateway.child.kill('SIGTERM');
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 20_000))]);
    }
    everything.child.kill('SIGTERM');
  } finally {
    killChildren();
    await finish(db);
  }
}

main().catch((error) => {
  console.error(error);
  killChildren();
  process.exit(1);
});
