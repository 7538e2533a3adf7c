// The broker check asked through Envoy's external authorization over gRPC, beside the same check
// through POST /api/broker/check, on one service process, in alternating rounds: checks/s and the
// service's CPU time per check of each, and their ratio. `npm run bench` runs it as one of its
// variants; `node scripts/bench-ext-authz.mjs` runs it alone (after `npm run build`).
// Env: BENCH_CONNECTIONS (100): concurrent checks in flight for both; BENCH_PAIR_ROUNDS (3) and
//      BENCH_PAIR_S (10): rounds and seconds per round; BENCH_GRPC_CHANNELS (4): gRPC connections
//      the load spreads over.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchDatabase, finish, freePort, killChildren, require, root, serviceCpuMs, startService } from './bench-harness.mjs';
import { mergeRefusals, refusalTally } from './bench-refusals.mjs';
import { CHECK_ARGS, checkBody, seed } from './bench-world.mjs';

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const autocannon = require('autocannon');

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const PAIR_ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 3);
const PAIR_S = Number(process.env.BENCH_PAIR_S ?? 10);
const CHANNELS = Number(process.env.BENCH_GRPC_CHANNELS ?? 4);

/** JSON as google.protobuf.Value, as proto-loader encodes it. */
function protoValue(value) {
  if (value === null) return { nullValue: 'NULL_VALUE' };
  if (Array.isArray(value)) return { listValue: { values: value.map(protoValue) } };
  if (typeof value === 'object') return { structValue: protoStruct(value) };
  if (typeof value === 'number') return { numberValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  return { stringValue: String(value) };
}
const protoStruct = (object) => ({ fields: Object.fromEntries(Object.entries(object).map(([k, v]) => [k, protoValue(v)])) });

export function authorizationClient(address) {
  const definition = protoLoader.loadSync('envoy/service/auth/v3/external_auth.proto', {
    includeDirs: [path.join(root, 'proto')],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
  });
  const { Authorization } = grpc.loadPackageDefinition(definition).envoy.service.auth.v3;
  // Separate channels: one HTTP/2 connection each, as several Envoy workers would hold.
  return Array.from(
    { length: CHANNELS },
    (_, i) =>
      new Authorization(address, grpc.credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
        'grpc.primary_user_agent': `bench-${i}`,
      }),
  );
}

/** The CheckRequest Envoy's MCP filter and ext_authz make for the world's tool call. */
export function mcpCheckRequest(world) {
  return {
    attributes: {
      request: {
        http: {
          method: 'POST',
          path: '/mcp',
          headers: { authorization: `Bearer ${world.agentToken}`, 'grant-id': world.leafId, 'content-type': 'application/json' },
        },
      },
      metadata_context: {
        filter_metadata: {
          'envoy.filters.http.mcp': protoStruct({
            method: 'tools/call',
            id: 1,
            params: { name: 'repos.read_file', arguments: CHECK_ARGS },
          }),
        },
      },
    },
  };
}

/** Keeps `CONNECTIONS` checks in flight for `seconds`; counts allowed answers and anything else. */
export async function grpcLoad(title, { address, brokerToken, request, seconds }) {
  console.log(`load: ${title} (${CONNECTIONS} in flight over ${CHANNELS} channels, ${seconds} s)`);
  const clients = authorizationClient(address);
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${brokerToken}`);
  let ok = 0;
  let refused = 0;
  let errors = 0;
  const until = Date.now() + seconds * 1000;
  const started = process.hrtime.bigint();
  const worker = async (i) => {
    const client = clients[i % clients.length];
    while (Date.now() < until) {
      await new Promise((resolve) =>
        client.Check(request, metadata, (error, response) => {
          if (error) errors += 1;
          else if (response.status?.code === 0 || response.status?.code === undefined) ok += 1;
          else refused += 1;
          resolve();
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => worker(i)));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  for (const client of clients) client.close();
  return { total: ok + refused + errors, ok, refused, errors, perSec: Math.round((ok + refused + errors) / elapsed) };
}

/**
 * Checks at a steady `rate`/s for `seconds` (request i due at start + i/rate, spread over the
 * channels), for bench:cpu's CPU per check through gRPC: counts allowed answers and anything else.
 */
export async function steadyGrpcRate({ address, brokerToken, request, rate, seconds }) {
  const clients = authorizationClient(address);
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${brokerToken}`);
  const counts = { ok2xx: 0, non2xx: 0, errors: 0 };
  const refusals = {};
  const total = Math.round(rate * seconds);
  const answered = [];
  const started = performance.now();
  for (let i = 0; i < total;) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
    for (; i < due; i += 1) {
      const client = clients[i % clients.length];
      answered.push(
        new Promise((resolve) =>
          client.Check(request, metadata, (error, response) => {
            if (error) counts.errors += 1;
            else if (response.status?.code === 0 || response.status?.code === undefined) counts.ok2xx += 1;
            else {
              counts.non2xx += 1;
              refusals[response.status.message] = (refusals[response.status.message] ?? 0) + 1;
            }
            resolve();
          }),
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await Promise.all(answered);
  for (const client of clients) client.close();
  if (counts.non2xx > 0) console.log(`refused through gRPC: ${JSON.stringify(refusals)}`);
  return counts;
}

function httpLoad(title, { base, brokerToken, body, seconds }) {
  console.log(`load: ${title} (${CONNECTIONS} connections, ${seconds} s)`);
  const refusals = refusalTally();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        requests: [{ onResponse: refusals.count }],
        url: `${base}/api/broker/check`,
        method: 'POST',
        connections: CONNECTIONS,
        duration: seconds,
        headers: { authorization: `Bearer ${brokerToken}`, 'content-type': 'application/json' },
        body,
      },
      (error, result) =>
        error
          ? reject(error)
          : resolve({
              total: result.requests.total,
              ok: result['2xx'],
              refused: result.non2xx,
              refusals: refusals.counts,
              errors: result.errors,
              perSec: Math.round(result.requests.average),
            }),
    );
    instance.on('error', reject);
  });
}

/**
 * Alternating rounds of the plain check (HTTP) and the gRPC ext_authz check on one service started
 * with EXT_AUTHZ_GRPC_PORT: checks/s and CPU µs per check of each, and the gRPC/plain CPU ratio.
 */
export async function extAuthzPair({ base, grpcPort, world, rounds = PAIR_ROUNDS, seconds = PAIR_S }) {
  const address = `127.0.0.1:${grpcPort}`;
  const request = mcpCheckRequest(world);
  const body = checkBody(world);
  const totals = { plain: { ms: 0, checks: 0, ok: 0, rates: [] }, grpc: { ms: 0, checks: 0, ok: 0, rates: [] } };
  for (let round = 1; round <= rounds; round += 1) {
    for (const key of ['plain', 'grpc']) {
      const before = serviceCpuMs(base);
      const result =
        key === 'plain'
          ? await httpLoad(`round ${round}: POST /api/broker/check`, { base, brokerToken: world.brokerToken, body, seconds })
          : await grpcLoad(`round ${round}: ext_authz gRPC Check (MCP metadata)`, {
              address,
              brokerToken: world.brokerToken,
              request,
              seconds,
            });
      totals[key].ms += serviceCpuMs(base) - before;
      totals[key].checks += result.total;
      totals[key].ok += result.ok;
      totals[key].rates.push(result.perSec);
      totals[key].notAllowed = (totals[key].notAllowed ?? 0) + result.total - result.ok;
      if (result.refusals) totals[key].refusals = mergeRefusals([totals[key].refusals, result.refusals]);
    }
  }
  const figures = (t) => ({
    checksPerSec: t.rates.sort((a, b) => a - b)[Math.floor(t.rates.length / 2)],
    roundsPerSec: t.rates,
    cpuMicrosPerCheck: Math.round((1000 * t.ms) / t.checks),
    // Refusals (a 503 when Redis answers slower than REDIS_COMMAND_TIMEOUT_MS on a loaded machine) and errors.
    notAllowed: t.notAllowed ?? 0,
    ...(t.refusals ? { refusals: t.refusals } : {}),
  });
  const plain = figures(totals.plain);
  const viaGrpc = figures(totals.grpc);
  return { plain, grpc: viaGrpc, cpuRatio: Number((viaGrpc.cpuMicrosPerCheck / plain.cpuMicrosPerCheck).toFixed(2)) };
}

async function main() {
  const db = await benchDatabase();
  try {
    const grpcPort = await freePort();
    const base = await startService({ DECISION_LOG: 'all', EXT_AUTHZ_GRPC_PORT: String(grpcPort) });
    const world = await seed(base, db, { name: 'bench-ext-authz' });
    const result = await extAuthzPair({ base, grpcPort, world });
    console.log(JSON.stringify(result, null, 2));
    console.log(
      `ext_authz gRPC: ${result.grpc.checksPerSec} checks/s, ${result.grpc.cpuMicrosPerCheck} µs CPU per check; ` +
        `plain check: ${result.plain.checksPerSec} checks/s, ${result.plain.cpuMicrosPerCheck} µs; CPU ratio ${result.cpuRatio} (target ≤ 1.15)`,
    );
  } finally {
    await finish(db);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    killChildren();
    process.exit(1);
  });
}
