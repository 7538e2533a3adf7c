// npm run bench:oauth (and a section of npm run bench): the authorization server's token endpoint
// at a steady rate, beside the same service's /healthz at the same rate, in alternating rounds.
//   The load is the steady state of connected MCP hosts: refresh-token grants (RFC 6749 §6), each
//   answered with a new access token and a rotated refresh token. Hosts are made as a person would
//   make them: a client registered dynamically, an authorization through the consent endpoints
//   (a child grant each), a code exchanged with PKCE; each host then holds one refresh-token family
//   and refreshes with the token its last refresh returned. Requests are open-loop: request i is
//   due at start + i/rate and its latency counts from then (as scripts/bench-rate.mjs does).
// Env: BENCH_OAUTH_RATE (50), BENCH_OAUTH_S (10), BENCH_OAUTH_ROUNDS (3), BENCH_OAUTH_HOSTS (16).
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import {
  benchDatabase,
  finish,
  humanToken,
  killChildren,
  machine,
  require,
  root,
  run,
  serviceCpuMs,
  startService,
  stopService,
} from './bench-harness.mjs';
import { seed } from './bench-world.mjs';

const RATE = Number(process.env.BENCH_OAUTH_RATE ?? 50);
const SECONDS = Number(process.env.BENCH_OAUTH_S ?? 10);
const ROUNDS = Number(process.env.BENCH_OAUTH_ROUNDS ?? 3);
const HOSTS = Number(process.env.BENCH_OAUTH_HOSTS ?? 16);
const REDIRECT = 'http://127.0.0.1:9/callback';

const { registerGatewayResource } = require(path.join(root, 'dist/src/oauth/resources.js'));

/** A browser's cookies for one authorization (name=value by path). */
class Jar {
  cookies = new Map();
  async fetch(url, init = {}) {
    const pathname = new URL(url).pathname;
    const cookie = [...this.cookies.values()]
      .filter((c) => pathname === c.path || pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
    const response = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, ...(cookie ? { cookie } : {}) } });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const [name, ...value] = pair.split('=');
      const cookiePath =
        attributes
          .map((a) => a.trim())
          .find((a) => a.toLowerCase().startsWith('path='))
          ?.slice(5) ?? '/';
      this.cookies.set(`${name.trim()}@${cookiePath}`, { name: name.trim(), value: value.join('='), path: cookiePath });
    }
    return response;
  }
}

const parentOf = {};

/** One host connected through consent: its refresh token. */
async function connectHost(base, clientId, resource, person, agentId) {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL(`${base}/oauth/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource,
    scope: 'mcp',
    state: 'bench',
  }))
    url.searchParams.set(key, value);
  const jar = new Jar();
  const start = await jar.fetch(url.href);
  const uid = /\/oauth\/consent\/([^/?]+)$/.exec(start.headers.get('location') ?? '')?.[1];
  if (!uid) throw new Error(`the authorization answered ${start.status} ${await start.text()}`);
  const auth = { authorization: `Bearer ${person}` };
  const details = await (await jar.fetch(`${base}/oauth/consent/${uid}/details`, { headers: auth })).json();
  const agent = details.pods.flatMap((pod) => pod.agents).find((candidate) => candidate.id === agentId);
  // Every host consents from the same grant (not from another host's child, which would nest ever deeper).
  parentOf.grant ??= agent?.grants[0];
  const grant = parentOf.grant;
  if (!grant) throw new Error(`nothing to consent to: ${JSON.stringify(details)}`);
  const decided = await jar.fetch(`${base}/oauth/consent/${uid}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'allow', agentId, grantId: grant.id, tools: grant.tools }),
  });
  const answer = await decided.json();
  if (!answer.redirectTo) throw new Error(`the consent answered ${decided.status} ${JSON.stringify(answer)}`);
  let next = new URL(answer.redirectTo, base).href;
  for (let hop = 0; hop < 5; hop += 1) {
    const hopped = await jar.fetch(next);
    const location = hopped.headers.get('location');
    if (!location) throw new Error(`${next} answered ${hopped.status} ${await hopped.text()}`);
    const target = new URL(location, next);
    if (target.origin !== new URL(base).origin) {
      const tokens = await tokenRequest(base, {
        grant_type: 'authorization_code',
        client_id: clientId,
        code: target.searchParams.get('code'),
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        resource,
      });
      if (!tokens.refresh_token) throw new Error(`no refresh token: ${JSON.stringify(tokens)}`);
      return tokens.refresh_token;
    }
    next = target.href;
  }
  throw new Error('too many redirects');
}

async function tokenRequest(base, params) {
  const response = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return response.json();
}

/**
 * `rate` requests a second for `seconds`, open-loop, each made by `next()` ({method, path, headers,
 * body}); `answered(status, body)` sees each answer. Latency counts from the request's due time.
 */
async function steady(base, { rate, seconds, next, answered = () => undefined }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const url = new URL(base);
  const total = Math.round(rate * seconds);
  const latencies = [];
  let failed = 0;
  const send = (dueAt) =>
    new Promise((resolve) => {
      const from = Math.min(dueAt, performance.now());
      const request = next();
      if (!request) {
        failed += 1;
        return resolve();
      }
      const req = http.request(
        { host: url.hostname, port: url.port, path: request.path, method: request.method, agent, headers: request.headers },
        (res) => {
          const chunks = [];
          res.on('data', (chunk) => chunks.push(chunk));
          res.once('end', () => {
            latencies.push(performance.now() - from);
            if (res.statusCode !== 200) failed += 1;
            answered(res.statusCode, Buffer.concat(chunks).toString('utf8'), request);
            resolve();
          });
        },
      );
      req.once('error', () => {
        failed += 1;
        resolve();
      });
      req.end(request.body);
    });
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  const pending = [];
  for (let i = 0; i < total; i += 1) {
    const dueAt = started + (i * 1000) / rate;
    const wait = dueAt - performance.now();
    if (wait > 1.5) await new Promise((resolve) => setTimeout(resolve, wait - 1));
    pending.push(send(dueAt));
  }
  await Promise.all(pending);
  loop.disable();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (p) => +(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN).toFixed(2);
  return {
    answered: latencies.length,
    failed,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: at(100),
    generatorLoopDelayP99: +(loop.percentile(99) / 1e6).toFixed(2),
  };
}

/** The token endpoint's figures on a service of its own, on the caller's throwaway database. */
export async function oauthTokenEndpoint(db) {
  const base = await startService();
  try {
    const world = await seed(base, db, { name: 'bench-oauth' });
    const brokerId = (await db('brokers').where('name', 'bench-oauth-broker').first('id')).id;
    const resource = `https://gateway-${run}.bench.test/mcp`;
    await registerGatewayResource(db, brokerId, resource);
    const registered = await (
      await fetch(`${base}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          client_name: 'Bench Host',
          redirect_uris: [REDIRECT],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      })
    ).json();
    const person = humanToken(`bench-owner-${run}`);
    const held = [];
    for (let i = 0; i < HOSTS; i += 1) held.push(await connectHost(base, registered.client_id, resource, person, world.agentId));

    // Each refresh takes a host's current token and gives back the rotated one.
    const refresh = {
      rate: RATE,
      seconds: SECONDS,
      next: () => {
        const token = held.shift();
        if (!token) return undefined;
        return {
          method: 'POST',
          path: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'refresh_token',
            client_id: registered.client_id,
            refresh_token: token,
            resource,
          }).toString(),
        };
      },
      answered: (status, body) => {
        if (status === 200) held.push(JSON.parse(body).refresh_token);
      },
    };
    const healthz = { rate: RATE, seconds: SECONDS, next: () => ({ method: 'GET', path: '/healthz', headers: {} }) };

    console.log(`oauth: warm-up, then ${ROUNDS} rounds of GET /healthz and the refresh grant at ${RATE}/s, ${SECONDS} s each`);
    await steady(base, { ...refresh, seconds: 2 });
    const rounds = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const healthzCpuBefore = serviceCpuMs(base);
      const baseline = await steady(base, healthz);
      // The same measure of /healthz: what the service's own background work costs per request at this rate.
      const cpuMicrosPerHealthz = Math.round((1000 * (serviceCpuMs(base) - healthzCpuBefore)) / Math.max(1, baseline.answered));
      const cpuBefore = serviceCpuMs(base);
      const tokens = await steady(base, refresh);
      const cpuMicrosPerRefresh = Math.round((1000 * (serviceCpuMs(base) - cpuBefore)) / Math.max(1, tokens.answered));
      rounds.push({ healthz: { ...baseline, cpuMicrosPerHealthz }, refresh: { ...tokens, cpuMicrosPerRefresh } });
      console.log(`  round ${round + 1}: healthz p99 ${baseline.p99} ms, refresh p99 ${tokens.p99} ms (${tokens.failed} failed)`);
    }
    return { rate: RATE, seconds: SECONDS, hosts: HOSTS, rounds };
  } finally {
    await stopService(base);
  }
}

/** The report's lines for these figures. */
export function oauthLines(r) {
  const lines = [`## Token endpoint (refresh grant) at ${r.rate}/s, ${r.hosts} hosts, ${r.rounds.length} rounds of ${r.seconds} s`];
  lines.push(
    '| round | healthz p50 / p99 (ms) | refresh p50 / p90 / p99 / max (ms) | failed, or unsent (every host waiting) | service CPU per healthz / per refresh (µs) |',
  );
  lines.push('| --- | --- | --- | --- | --- |');
  r.rounds.forEach(({ healthz, refresh }, i) =>
    lines.push(
      `| ${i + 1} | ${healthz.p50} / ${healthz.p99} | ${refresh.p50} / ${refresh.p90} / ${refresh.p99} / ${refresh.max} | ${refresh.failed} | ${healthz.cpuMicrosPerHealthz} / ${refresh.cpuMicrosPerRefresh} |`,
    ),
  );
  const worst = Math.max(...r.rounds.map((round) => round.refresh.p99));
  lines.push(`target: refresh p99 <= 20 ms at ${r.rate}/s — worst round ${worst} ms: ${worst <= 20 ? 'met' : 'NOT met'}`);
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const db = await benchDatabase();
  try {
    const results = await oauthTokenEndpoint(db);
    console.log(`\n${machine()}`);
    console.log(oauthLines(results).join('\n'));
  } catch (error) {
    console.error(error);
    killChildren();
    process.exitCode = 1;
  } finally {
    await finish(db);
  }
}
