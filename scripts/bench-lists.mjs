// npm run bench:lists: the cost of reading a pod's grants among many a caller cannot read.
// Seeds a pod with an owner (the connection owner), a human member, an installed agent, a few
// pod grants and BENCH_UNREADABLE (10 000) seat grants of another seat, then times, request by
// request, GET /api/pods/:podId/grants (limit 1 and 50) for the owner and the member, and the
// agent's pod context. The member's answer comes from the pre-filter in Postgres; the point is
// that it stays within 2x the owner's, whom the policy lets read everything.
import {
  api,
  benchDatabase,
  finish,
  humanToken,
  killChildren,
  machine,
  percentile,
  registerBroker,
  require,
  run,
  startService,
} from './bench-harness.mjs';

const UNREADABLE = Number(process.env.BENCH_UNREADABLE ?? 10_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const { newId } = require('../dist/src/kernel/ids.js');

async function seed(base, db) {
  const owner = humanToken(`lists-owner-${run}`);
  const memberId = `lists-member-${run}`;
  const pod = await api(base, 'POST', '/api/pods', owner, { name: 'Lists pod' });
  await api(base, 'POST', `/api/pods/${pod.id}/members`, owner, { userId: memberId, role: 'member' });
  for (const name of ['reader', 'other']) await api(base, 'POST', `/api/registry/pods/${pod.id}/agents`, owner, { name });
  const agentToken = (await api(base, 'POST', `/api/registry/pods/${pod.id}/agents/reader/runtime-tokens`, owner, { name: 'b' })).token;
  const other = await api(base, 'GET', `/api/registry/pods/${pod.id}/agents/other`, owner);
  const broker = await registerBroker(db, 'lists-broker');
  const connection = await api(base, 'POST', '/api/connections', owner, {
    kind: 'code_hosting_app',
    brokerId: broker.id,
    externalInstallationId: `lists-${run}`,
    tools: [{ name: 'repos.read_file', access: 'read' }],
  });
  const grant = (target) => api(base, 'POST', '/api/grants', owner, { connectionId: connection.id, target, tools: ['repos.read_file'] });
  for (let i = 0; i < 3; i += 1) await grant({ kind: 'pod', id: pod.id });
  // Seat grants of `other`, newer than the pod grants: the member and the reader agent cannot read one.
  const template = await db('grants')
    .where('id', (await grant({ kind: 'seat', id: other.agentId })).id)
    .first();
  for (let i = 0; i < UNREADABLE; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, UNREADABLE - i) }, () => {
      const id = newId('grant');
      return { ...template, id, root_id: id, created_at: new Date() };
    });
    await db('grants').insert(rows);
  }
  return { podId: pod.id, owner, member: humanToken(memberId), agentToken };
}

async function timed(base, url, token) {
  const ms = [];
  for (let i = 0; i < REQUESTS; i += 1) {
    const started = process.hrtime.bigint();
    const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${url}: ${res.status}`);
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const round = (v) => Math.round(v * 100) / 100;
  return { p50: round(percentile(ms, 50)), p90: round(percentile(ms, 90)), p99: round(percentile(ms, 99)) };
}

async function main() {
  const db = await benchDatabase();
  const rows = {};
  try {
    const base = await startService();
    const world = await seed(base, db);
    for (const limit of [1, 50]) {
      const url = `/api/pods/${world.podId}/grants?limit=${limit}`;
      rows[`owner, limit=${limit}`] = await timed(base, url, world.owner);
      rows[`member, limit=${limit}`] = await timed(base, url, world.member);
    }
    rows['agent, pod context'] = await timed(base, `/api/agents/runtime/pods/${world.podId}/context`, world.agentToken);
  } finally {
    await finish(db);
  }
  console.log(`\n=== pod grant list among ${UNREADABLE} unreadable seat grants (${REQUESTS} sequential requests each, ms) ===`);
  console.log(`machine: ${machine()}`);
  console.table(rows);
  for (const limit of [1, 50]) {
    const ratio = rows[`member, limit=${limit}`].p50 / rows[`owner, limit=${limit}`].p50;
    console.log(`limit=${limit}: member / owner p50 = ${ratio.toFixed(2)}`);
  }
}

main().catch((error) => {
  console.error(error);
  killChildren();
  process.exit(1);
});
