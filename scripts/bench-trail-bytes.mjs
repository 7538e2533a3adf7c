// The bytes the trail's Merkle tree adds per record, measured on disk, not computed from row
// layouts: the same checks (each with its outcome reported) made by a service with the tree and by
// one with TRAIL_TREE=off, in turn on one database. Each measure is pg_total_relation_size (heap,
// indexes, TOAST) of every call_records partition and held_call_records, and of trail_hashes,
// trail_tree and trail_checkpoints, each compacted first (VACUUM FULL): the bytes the rows and
// their index entries hold, not the free space an outcome's update or the head row's versions left
// behind until autovacuum, which later rows reuse and which made the figures swing by tens of bytes
// a record from run to run. Per mode:
//   today's day dropped first (settles the days made ahead), D0;
//   N checks, the day dropped by retention, D1;
//   N checks, R(N); N more, R(2N); the day dropped by retention, D2.
// Marginal bytes per record: over a retained day (R(2N) - R(N)) / N; once dropped, what dropping
// 2N records left minus what dropping N left, ((D2 - D1) - (D1 - D0)) / N, so each day's fixed
// costs (its kept checkpoint, the hashes at its edges) cancel out. The tree's share is the figure
// with the tree less the one without. A page is 8 kB: a figure is good to about 8192 / N bytes.
// A few thousand records move a stored-hash table by a page or two: the bytes a dropped record
// leaves are resolved at scale too, by 2^20 more leaves appended with trail_append (the function
// every group commit calls) on the same tree, per leaf, times the leaves a record took above.
// The drop is the maintenance job's own pass (export-less retention: the hashes standing for the
// day kept first, then the partition dropped), run with a clock two days ahead and 1 day retained.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { require, root, sleep, startService, stopService } from './bench-harness.mjs';

const partitions = require(path.join(root, 'dist/src/trail/repositories/days.js'));
const { maintainTrail } = require(path.join(root, 'dist/src/trail/maintenance.js'));
const { packHashes } = require(path.join(root, 'dist/src/trail/repositories/tree.js'));
const DAY_MS = 86_400_000;
const PARTS = ['records', 'hashes', 'head', 'checkpoints'];
const log = { debug() {}, info() {}, warn: console.warn, error: console.error };

async function sizes(db) {
  await db.raw('vacuum full call_records, held_call_records, trail_hashes, trail_hash_packs, trail_tree, trail_checkpoints');
  const { rows } = await db.raw(
    `select (select sum(pg_total_relation_size(relid)) from pg_partition_tree('call_records'))
              + pg_total_relation_size('held_call_records') as records,
            pg_total_relation_size('trail_hashes') + pg_total_relation_size('trail_hash_packs') as hashes,
            pg_total_relation_size('trail_tree') as head,
            pg_total_relation_size('trail_checkpoints') as checkpoints,
            (select count(*) from trail_hashes) as hash_rows,
            (select size from trail_tree) as size,
            (select count(*) from trail_checkpoints) as checkpoint_rows`,
  );
  return Object.fromEntries(Object.entries(rows[0]).map(([key, value]) => [key, Number(value)]));
}

/** Today's records dropped as retention drops a day (a clock two days on, one day kept); today made again. */
async function dropToday(db) {
  const today = new Date().toISOString().slice(0, 10);
  const run = await maintainTrail({ db, clock: { now: () => Date.now() + 2 * DAY_MS }, log, retentionDays: 1 });
  if (!run.dropped.includes(today)) throw new Error(`retention did not drop ${today}: ${JSON.stringify(run)}`);
  await partitions.createTrailDay(db, today);
}

const diff = (x, y) => Object.fromEntries(PARTS.map((part) => [part, x[part] - y[part]]));
const perRecord = (bytes, n) => {
  const parts = Object.fromEntries(PARTS.map((part) => [part, Number((bytes[part] / n).toFixed(2))]));
  return { total: Number((PARTS.reduce((sum, part) => sum + bytes[part], 0) / n).toFixed(2)), ...parts };
};

async function measure(db, mode, world, grantIds, n, checks) {
  const base = await startService({ DECISION_LOG: 'off', REDIS_COMMAND_TIMEOUT_MS: '2000', TRAIL_TREE: mode });
  // The last checkpoint is signed within TRAIL_CHECKPOINT_MS (1 s) of the last append.
  const settled = async () => {
    await sleep(1500);
    return sizes(db);
  };
  try {
    await dropToday(db);
    const d0 = await sizes(db);
    await checks(base, world, grantIds, n);
    await sleep(1500);
    await dropToday(db);
    const d1 = await sizes(db);
    await checks(base, world, grantIds, n);
    const rN = await settled();
    await checks(base, world, grantIds, n);
    const r2N = await settled();
    await dropToday(db);
    const d2 = await sizes(db);
    const retained = diff(r2N, rN);
    const dropped = diff(diff(d2, d1), diff(d1, d0));
    return { mode, raw: { d0, d1, rN, r2N, d2 }, retained: perRecord(retained, n), dropped: perRecord(dropped, n) };
  } finally {
    await stopService(base);
  }
}

/**
 * What the stored hashes (trail_hashes and trail_hash_packs) grow by per leaf over `leaves` more
 * leaves: what stays of a leaf once its record is dropped, before and after maintenance packs them
 * (all of them as if their days were dropped).
 */
async function storedHashBytesPerLeaf(db, leaves) {
  const measured = async () => {
    await db.raw('vacuum full trail_hashes, trail_hash_packs');
    const { rows } = await db.raw(
      `select pg_total_relation_size('trail_hashes') + pg_total_relation_size('trail_hash_packs') as bytes, (select size from trail_tree) as size`,
    );
    return { bytes: Number(rows[0].bytes), size: Number(rows[0].size) };
  };
  const before = await measured();
  const batch = 512;
  for (let at = 0; at < leaves; at += batch) {
    const hashes = Array.from({ length: batch }, (_, i) =>
      createHash('sha256')
        .update(`bench leaf ${at + i}`)
        .digest(),
    );
    await db.raw('select trail_append(?::bytea[])', [hashes]);
  }
  const unpacked = await measured();
  await packHashes(db, unpacked.size);
  const packed = await measured();
  const perLeaf = (after) => Number(((after.bytes - before.bytes) / (after.size - before.size)).toFixed(3));
  return { unpacked: perLeaf(unpacked), packed: perLeaf(packed) };
}

/**
 * Bytes per record the tree adds, retained and dropped: with the tree against TRAIL_TREE=off,
 * N = `records` (3N checks each). `checks(base, world, grantIds, count)` makes checks with outcomes.
 */
export async function treeBytesPerRecord({ db, world, grantIds, records, checks }) {
  const off = await measure(db, 'off', world, grantIds, records, checks);
  console.log(`   TRAIL_TREE=off: ${JSON.stringify({ retained: off.retained, dropped: off.dropped })}`);
  const on = await measure(db, 'on', world, grantIds, records, checks);
  console.log(`   tree on:        ${JSON.stringify({ retained: on.retained, dropped: on.dropped })}`);
  const leavesPerRecord = (on.raw.r2N.size - on.raw.rN.size) / records;
  const perLeaf = await storedHashBytesPerLeaf(db, 1 << 20);
  console.log(`   stored hashes at scale: ${JSON.stringify(perLeaf)} B a leaf (rows, packed), ${leavesPerRecord} leaves a record`);
  const added = (key) =>
    Object.fromEntries(Object.keys(on[key]).map((part) => [part, Number((on[key][part] - off[key][part]).toFixed(2))]));
  return {
    records,
    resolution: Number((8192 / records).toFixed(2)),
    treeAdds: { retainedDay: added('retained'), droppedDay: added('dropped') },
    // Exact where the page-rounded bytes are not: stored hashes a record adds (two leaves a record).
    hashRowsPerRecord: Number(((on.raw.r2N.hash_rows - on.raw.rN.hash_rows) / records).toFixed(4)),
    droppedAtScale: {
      leavesPerRecord,
      unpacked: { bytesPerLeaf: perLeaf.unpacked, bytesPerRecord: Number((perLeaf.unpacked * leavesPerRecord).toFixed(2)) },
      packed: { bytesPerLeaf: perLeaf.packed, bytesPerRecord: Number((perLeaf.packed * leavesPerRecord).toFixed(2)) },
    },
    checkpointsPerRecord: Number(((on.raw.r2N.checkpoint_rows - on.raw.rN.checkpoint_rows) / records).toFixed(4)),
    off,
    on,
  };
}
