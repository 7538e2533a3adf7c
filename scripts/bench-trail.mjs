// npm run bench:trail [-- --records N --days D --grants G --queries Q --checks C --checked-grants K]
// The call trail at scale, on a throwaway database:
//   1. C real checks (default 60 000) through the built service, each with its outcome reported, taking
//      K grants (default 64) in turn; then the trail's bytes per record from the real table (every
//      partition, indexes included), what the second half of them added per record, and the bytes
//      once the day's B-tree is packed (as the maintenance job packs a day once it is over);
//   2. N records (default 50 000 000) over the D latest UTC days (default 60) written with COPY, one
//      day partition at a time, G grants (default 100 000) sharing them at random, and the seeded
//      grant given 2 000 a day so its trail is 120 000 records deep; then every day before today
//      packed, as the maintenance job would have;
//   3. Q requests (default 1 000) of `GET /api/grants/:grantId/calls` for that grant: the first page,
//      and the page after a cursor half the days back, p50 and p99 (one client, one request at a time);
//      then the trail searched as the console asks it (a denied call by tool and reason, a tool, a
//      principal, an hour), p50 and p99;
//   4. the plan Postgres runs each with (EXPLAIN ANALYZE, BUFFERS), the denied search's too.
//   5. (--only tree, or alone with --only bytes) the bytes per record the Merkle tree adds, measured on disk
//      with the tree against TRAIL_TREE=off, over a retained day and once the day is dropped by retention,
//      at --tree-records N and 2N (3N checks each way; scripts/bench-trail-bytes.mjs says how);
//   6. (--only tree) inclusion and consistency proof latency, p50 and p99, at --leaves leaves (default 50 000 000),
//      the tree grown past the real leaves with synthetic stored hashes (scripts/bench-trail-proofs.mjs says how);
//      with --baseline-root DIR, against that checkout's build too, in alternating rounds.
// A benchmark, not a test: it prints figures and judges nothing.
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import path from 'node:path';
import { api, benchDatabase, finish, humanToken, percentile, require, root, run, startService, stopService } from './bench-harness.mjs';
import { checkBody, seed } from './bench-world.mjs';
import { proofLatency } from './bench-trail-proofs.mjs';
import { treeBytesPerRecord } from './bench-trail-bytes.mjs';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '50000000' },
    days: { type: 'string', default: '60' },
    grants: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '1000' },
    checks: { type: 'string', default: '60000' },
    'checked-grants': { type: 'string', default: '64' },
    // `tree`: only the checks (with the bytes the tree adds) and the proofs at --leaves; `bytes`: only the
    // tree's bytes, on against off; `all`: everything.
    only: { type: 'string', default: 'all' },
    'tree-records': { type: 'string', default: '20000' },
    leaves: { type: 'string', default: '50000000' },
    // A checkout of another build (its dist/ built): its service answers the same proofs on the same
    // database, in alternating rounds with this one's (part 6).
    'baseline-root': { type: 'string' },
  },
});
const TREE_ONLY = values.only === 'tree';
const BYTES_ONLY = values.only === 'bytes';
const RECORDS = Number(values.records);
const DAYS = Number(values.days);
const GRANTS = Number(values.grants);
const QUERIES = Number(values.queries);
/** One in so many of the measured grant's filled records is a denial (the trail search's needle). */
const DENIED_EVERY = 20;
const CHECKS = Number(values.checks);
const CHECKED_GRANTS = Number(values['checked-grants']);
const OWN_PER_DAY = 2000;
const DAY_MS = 86_400_000;

const { from: copyFrom } = require('pg-copy-streams');
const { TypeID } = require('typeid-js');
const partitions = require(path.join(root, 'dist/src/trail/repositories/days.js'));
const compaction = require(path.join(root, 'dist/src/trail/repositories/packing.js'));
const records = require(path.join(root, 'dist/src/trail/repositories/call-record-listings.js'));
const shapes = require(path.join(root, 'dist/src/trail/repositories/shapes.js'));

/**
 * The bytes the trail's Merkle tree adds: its tables (stored hashes, head, checkpoints) with their
 * indexes, the records' leaf index columns, and any index over those columns; per record kept.
 */
async function treeBytes(db) {
  const { rows } = await db.raw(
    `select (select count(*) from call_records) + (select count(*) from held_call_records) as records,
            pg_total_relation_size('trail_hashes') as hashes,
            (select count(*) from trail_hashes) as hash_rows,
            pg_total_relation_size('trail_tree') as head,
            pg_total_relation_size('trail_checkpoints') as checkpoints,
            (select count(*) from trail_checkpoints) as checkpoint_rows,
            (select coalesce(sum(pg_column_size(leaf_index)), 0) + coalesce(sum(pg_column_size(outcome_leaf_index)), 0) from call_records) as columns,
            (select coalesce(sum(pg_relation_size(i.indexrelid)), 0) from pg_partition_tree('call_records') t
               join pg_index i on i.indrelid = t.relid join pg_class c on c.oid = i.indexrelid where c.relname like '%leaf%') as leaf_indexes`,
  );
  const r = Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]));
  const total = r.hashes + r.head + r.checkpoints + r.columns + r.leaf_indexes;
  const per = (bytes) => Number((bytes / Math.max(r.records, 1)).toFixed(2));
  return {
    ...r,
    bytesPerRecord: per(total),
    hashesPerRecord: per(r.hashes),
    checkpointsPerRecord: per(r.checkpoints),
    columnsPerRecord: per(r.columns + r.leaf_indexes),
  };
}

const uuidHex = (typeid) => Buffer.from(TypeID.fromString(typeid).toUUIDBytes()).toString('hex');
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);

/** C checks, each followed by its outcome, `concurrency` at a time, taking the grants in turn. */
async function realChecks(base, world, grantIds, count, concurrency = 16) {
  const bodies = grantIds.map((grantId) => ({ ...JSON.parse(checkBody(world)), grantId }));
  let next = 0;
  let refused = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      // A 503 (a Redis or Postgres too slow on shared cores) records nothing: try again.
      const answer = await api(base, 'POST', '/api/broker/check', world.brokerToken, bodies[next % bodies.length]).catch((error) => {
        if (!/: 503 /.test(error.message) || (refused += 1) > count / 10) throw error;
        next -= 1;
        return null;
      });
      if (!answer) continue;
      if (answer.decision !== 'allow') throw new Error(`a bench check was not allowed: ${JSON.stringify(answer)}`);
      const outcome = next % 10 === 0 ? { outcome: 'failed', errorCode: 'upstream:timeout' } : { outcome: 'succeeded', durationMs: 40 };
      const report = () => api(base, 'POST', `/api/broker/calls/${answer.callId}/outcome`, world.brokerToken, outcome);
      // A 503 promises nothing: sent again, an outcome the first send recorded answers 409.
      await report().catch(async (error) => {
        if (!/: 503 /.test(error.message) || (refused += 1) > count / 10) throw error;
        await report().catch((again) => {
          if (!/: 409 .*outcome_already_recorded/.test(again.message)) throw again;
        });
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return refused;
}

/** One day's rows as COPY text: ids minted at their record's time, as the service mints them. */
function* dayRows(dayStartMs, count, ownCount, ownGrant, shape, deniedShape) {
  const step = DAY_MS / (count + ownCount);
  const grants = Array.from({ length: GRANTS }, (_, g) => g.toString(16).padStart(32, '0'));
  let lines = [];
  for (let i = 0; i < count + ownCount; i += 1) {
    const at = Math.floor(dayStartMs + i * step);
    const random = randomBytes(48);
    random.writeUIntBE(at, 0, 6);
    random[6] = (random[6] & 0x0f) | 0x70;
    random[8] = (random[8] & 0x3f) | 0x80;
    const own = i % Math.ceil((count + ownCount) / Math.max(ownCount, 1)) === 0;
    const grant = own ? ownGrant : grants[random.readUInt32BE(12) % GRANTS];
    const requested = new Date(at).toISOString();
    // An allowed call names the policy decision that allowed it (a UUIDv4) in decision_id.
    random[40] = (random[40] & 0x0f) | 0x40;
    const decision = random.toString('hex', 32, 48);
    // One in DENIED_EVERY of the measured grant's calls was denied (another tool), for the trail search.
    const denied = own && (i / Math.ceil((count + ownCount) / Math.max(ownCount, 1))) % DENIED_EVERY === 0;
    lines.push(
      denied
        ? `${requested}\t\\N\t\\N\t${deniedShape}\t1\t${random.toString('hex', 0, 16)}\t${grant}\t\\N\t\\\\x${random.toString('hex', 16, 48)}\ttool_not_allowed\t\\N\n`
        : `${requested}\t45\t40\t${shape}\t2\t${random.toString('hex', 0, 16)}\t${grant}\t${decision}\t\\\\x${random.toString('hex', 16, 48)}\t\\N\t\\N\n`,
    );
    if (lines.length === 2000) {
      yield lines.join('');
      lines = [];
    }
  }
  if (lines.length > 0) yield lines.join('');
}

async function fill(db, ownGrant, shape, deniedShape) {
  const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const perDay = Math.floor(RECORDS / DAYS);
  const started = performance.now();
  for (let d = DAYS - 1; d >= 0; d -= 1) {
    const dayStart = today - d * DAY_MS;
    const day = new Date(dayStart).toISOString().slice(0, 10);
    await partitions.createTrailDay(db, day);
    const connection = await db.client.acquireConnection();
    try {
      const copy = connection.query(
        copyFrom(
          `copy ${partitions.dayTable(day)} (requested_at, completed_after_ms, duration_ms, shape, outcome, id, grant_id,` +
            ` decision_id, args_digest, reason, error_code) from stdin`,
        ),
      );
      await pipeline(dayRows(dayStart, perDay, OWN_PER_DAY, ownGrant, shape, deniedShape), copy);
    } finally {
      await db.client.releaseConnection(connection);
    }
    const done = DAYS - d;
    console.log(`  day ${day}: ${done}/${DAYS} days, ${done * (perDay + OWN_PER_DAY)} records, ${seconds(started)} s`);
  }
  console.log(`vacuum analyze call_records (visibility map and statistics, as autovacuum would leave them)`);
  await db.raw('vacuum analyze call_records');
  return { seconds: Number(seconds(started)), perDay };
}

async function latencies(base, token, url) {
  const times = [];
  for (let i = 0; i < QUERIES; i += 1) {
    const started = performance.now();
    const page = await api(base, 'GET', url, token);
    times.push(performance.now() - started);
    if (!Array.isArray(page.items) || page.items.length === 0) throw new Error(`an empty page: ${JSON.stringify(page).slice(0, 200)}`);
  }
  times.sort((a, b) => a - b);
  return { p50: Number(percentile(times, 50).toFixed(2)), p99: Number(percentile(times, 99).toFixed(2)), n: QUERIES };
}

const SERVICE_ENV = { DECISION_LOG: 'off', REDIS_COMMAND_TIMEOUT_MS: '2000', ATTENUATION_RATE_LIMIT: '1000' };

async function main() {
  const db = await benchDatabase();
  const results = {};
  try {
    const base = await startService(SERVICE_ENV);
    const world = await seed(base, db, { name: 'bench-trail' });
    const owner = humanToken(`bench-owner-${run}`);

    if (!BYTES_ONLY) console.log(`1. ${CHECKS} real checks, each with its outcome, across ${CHECKED_GRANTS} grants in turn`);
    // Sibling grants below the seeded leaf: their records interleave in the B-tree as a busy trail's do.
    const siblings = [];
    for (let i = 0; i < CHECKED_GRANTS; i += 1)
      siblings.push((await api(base, 'POST', `/api/grants/${world.leafId}/attenuate`, world.agentToken, {})).id);
    const measureTreeBytes = async () => {
      console.log(`5. bytes per record the tree adds, on against TRAIL_TREE=off, at ${values['tree-records']} and twice as many`);
      results.treeBytes = await treeBytesPerRecord({
        db,
        world,
        grantIds: siblings,
        records: Number(values['tree-records']),
        checks: realChecks,
      });
      console.log(`   the tree adds: ${JSON.stringify(results.treeBytes.treeAdds)}`);
    };
    if (BYTES_ONLY) {
      await measureTreeBytes();
      console.log(JSON.stringify(results, null, 2));
      return;
    }
    let started = performance.now();
    // In two halves: what the second half added is what a further record costs, the fixed cost of
    // the days' empty structures (each partition's indexes, its maps, the days made ahead) left out.
    const half = Math.floor(CHECKS / 2);
    let refused = await realChecks(base, world, siblings, half);
    const halfway = await partitions.trailFootprint(db);
    refused += await realChecks(base, world, siblings, CHECKS - half);
    results.checks = { count: CHECKS, refused, seconds: Number(seconds(started)), ...(await partitions.trailFootprint(db)) };
    results.checks.marginalBytesPerRecord = Math.round((results.checks.bytes - halfway.bytes) / (results.checks.records - halfway.records));
    results.checks.breakdown = await partitions.trailBreakdown(db);
    results.checks.tree = await treeBytes(db);
    console.log(`   the tree adds: ${JSON.stringify(results.checks.tree)}`);
    if (TREE_ONLY) {
      // The proofs first, over the real records of part 1 (the bytes step drops their day and appends
      // leaves without records); the tree is then put back as part 1 left it.
      console.log(`6. proofs at ${values.leaves} leaves, ${QUERIES} requests each`);
      const baseline = values['baseline-root']
        ? await startService(SERVICE_ENV, [], path.resolve(values['baseline-root'], 'dist/src/main.js'))
        : undefined;
      results.proofs = await proofLatency({
        db,
        base,
        owner,
        leaves: Number(values.leaves),
        queries: QUERIES,
        grantIds: siblings,
        baseline,
      });
      if (baseline) await stopService(baseline);
      console.log(`   ${JSON.stringify(results.proofs)}`);
      await measureTreeBytes();
      console.log(JSON.stringify(results, null, 2));
      return;
    }
    // What the maintenance job does to the day once it is over: its B-tree rebuilt packed.
    await compaction.packTrailDay(db, new Date().toISOString().slice(0, 10));
    results.checks.packed = { ...(await partitions.trailFootprint(db)), breakdown: await partitions.trailBreakdown(db) };
    console.log(`   ${JSON.stringify(results.checks)}`);

    console.log(`2. ${RECORDS} records over ${DAYS} days with COPY`);
    const agentId = (await db('agents').first('id')).id;
    const [shape, deniedShape] = await shapes.shapeCodes(db, [
      { tool: 'repos.read_file', principal_kind: 'agent', principal_id: agentId },
      { tool: 'issues.create_comment', principal_kind: 'agent', principal_id: agentId },
    ]);
    results.fill = await fill(db, uuidHex(world.leafId), shape, deniedShape);
    started = performance.now();
    results.fill.footprint = await partitions.trailFootprint(db);
    results.fill.breakdown = await partitions.trailBreakdown(db);
    results.fill.countSeconds = Number(seconds(started));
    console.log(`   ${JSON.stringify(results.fill)}`);
    // Every day before today is closed: the maintenance job would have packed each one's B-tree.
    started = performance.now();
    const today = new Date().toISOString().slice(0, 10);
    for (const { day } of await compaction.dayIndexes(db)) if (day < today) await compaction.packTrailDay(db, day);
    results.fill.packed = {
      seconds: Number(seconds(started)),
      ...(await partitions.trailFootprint(db)),
      breakdown: await partitions.trailBreakdown(db),
    };
    console.log(`   closed days packed: ${JSON.stringify(results.fill.packed)}`);

    // The fill and the packing leave gigabytes of dirty pages; flushed first, the latencies are those
    // of a trail at rest, not of a disk still busy writing them out behind each request.
    await db.raw('checkpoint');
    console.log(`3. GET /api/grants/:grantId/calls, ${QUERIES} times each`);
    const first = `/api/grants/${world.leafId}/calls?limit=50`;
    const deep = new Date(Date.now() - Math.floor(DAYS / 2) * DAY_MS);
    const [older] = await records.callRecordsAfter(db, world.leafId, { at: deep, id: 'call_7zzzzzzzzzzzzzzzzzzzzzzzzz' }, 1);
    const cursor = Buffer.from(JSON.stringify([older.requested_at.toISOString(), older.id])).toString('base64url');
    results.firstPage = await latencies(base, owner, first);
    results.pageAfterCursor = await latencies(base, owner, `${first}&cursor=${cursor}`);
    console.log(`   first page: ${JSON.stringify(results.firstPage)}`);
    console.log(`   ${Math.floor(DAYS / 2)} days back: ${JSON.stringify(results.pageAfterCursor)}`);
    // The trail searched, as the console's filters ask it.
    const hourBack = new Date(deep.getTime() + 3_600_000).toISOString();
    const searches = {
      'denied, by tool and reason': '&outcome=denied&tool=issues.create_comment&reason=tool_not_allowed',
      'one tool': '&tool=repos.read_file',
      'one principal, succeeded': `&principal=${agentId}&outcome=succeeded`,
      [`an hour ${Math.floor(DAYS / 2)} days back`]: `&from=${deep.toISOString()}&to=${hourBack}`,
    };
    results.search = {};
    for (const [name, filter] of Object.entries(searches)) {
      results.search[name] = await latencies(base, owner, `${first}${filter}`);
      console.log(`   search, ${name}: ${JSON.stringify(results.search[name])}`);
    }

    console.log('4. the plans');
    console.log(await records.callRecordsAfterPlan(db, world.leafId, null, 51));
    console.log(`   -- after a cursor ${Math.floor(DAYS / 2)} days back:`);
    console.log(await records.callRecordsAfterPlan(db, world.leafId, { at: older.requested_at, id: older.id }, 51));
    console.log('   -- denied, by tool and reason:');
    console.log(
      await records.callRecordsAfterPlan(db, world.leafId, null, 51, {
        outcome: 'denied',
        tool: 'issues.create_comment',
        reason: 'tool_not_allowed',
      }),
    );
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await finish(db);
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
