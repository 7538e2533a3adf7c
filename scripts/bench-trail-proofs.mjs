// Proof latency at a large tree, for bench-trail.mjs (`--leaves`, default 50 000 000).
// Filling that many real records is too slow for this machine, so the tree is grown to that size
// directly in SQL: past the real leaves (the checks of part 1, each with its record), the stored
// hashes of level 8 and up are synthetic (one per 256 leaves, upper levels hashed from them), and
// the few nodes below level 8 at the real span's edge and the tree's right edge are stored as a
// dropped day's would be. The proofs are then served by the service's own routes, the same code
// path as production (stored upper hashes, lower levels rebuilt from the records of the block),
// for real records and between real and synthetic sizes; a sample is verified by grantctl's code.
import path from 'node:path';
import { api, percentile, require, root } from './bench-harness.mjs';

const store = require(path.join(root, 'dist/src/trail/tree-store.js'));
const leafCode = require(path.join(root, 'dist/src/trail/tree/leaves.js'));
const verifier = require(path.join(root, 'clients/grantctl/dist/trail-proofs.js'));
const leafRecords = require(path.join(root, 'dist/src/trail/repositories/leaf-records.js'));
const BLOCK = 256;

/** The complete aligned subtrees leaves [lo, hi) split into, largest first. */
function nodesOf(lo, hi) {
  const nodes = [];
  let at = lo;
  while (at < hi) {
    let size = 1;
    while (at % (size * 2) === 0 && at + size * 2 <= hi) size *= 2;
    nodes.push({ level: Math.log2(size), index: at / size });
    at += size;
  }
  return nodes;
}

async function text(base, url) {
  const res = await fetch(`${base}${url}`);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return res.text();
}

const stats = (times) => {
  times.sort((a, b) => a - b);
  return { p50: Number(percentile(times, 50).toFixed(2)), p99: Number(percentile(times, 99).toFixed(2)), n: times.length };
};

/**
 * The proofs' latencies against each service of `bases` (name: URL; the first is the one measured,
 * others a baseline build on the same database), in alternating rounds of `round` requests, so
 * that each build meets the same moments of a shared machine.
 */
async function alternating(bases, queries, round, measure) {
  const times = Object.fromEntries(Object.keys(bases).map((name) => [name, { proof: [], floor: [] }]));
  for (let done = 0; done < queries; done += round)
    for (const [name, base] of Object.entries(bases)) {
      const n = Math.min(round, queries - done);
      await measure(base, done, n, times[name]);
    }
  return Object.fromEntries(Object.entries(times).map(([name, { proof, floor }]) => [name, { ...stats(proof), floor: stats(floor) }]));
}

async function timedInto(count, first, request, floor, into) {
  for (let i = first; i < first + count; i += 1) {
    let started = performance.now();
    await request(i);
    into.proof.push(performance.now() - started);
    started = performance.now();
    await floor();
    into.floor.push(performance.now() - started);
  }
}

// Each proof followed by the floor: the latest signed checkpoint (public, like the consistency
// proofs), one indexed read behind the same route call.
const besideCheckpoint = (request) => (at, first, n, into) =>
  timedInto(
    n,
    first,
    (i) => request(at, i),
    () => text(at, '/api/trail/checkpoint'),
    into,
  );

/** The checkpoint of `size`, once the service has signed it, opened with its key. */
async function signedAt(base, size) {
  let note = '';
  for (let i = 0; i < 100 && Number((note = await text(base, '/api/trail/checkpoint')).split('\n')[1]) < size; i += 1)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const checkpoint = verifier.openCheckpoint(note, (await text(base, '/api/trail/key')).trim());
  if (checkpoint.size !== size) throw new Error(`no checkpoint of size ${size} was signed`);
  return checkpoint;
}

/** Every build's inclusion proof of each record at `size`, checked by grantctl's own verifier code. */
async function verifiedInclusions(bases, owner, records, size, root) {
  let verified = 0;
  for (const at of Object.values(bases))
    for (const record of records) {
      const proof = await api(at, 'GET', `/api/trail/proofs/inclusion?callId=${record.id}&treeSize=${size}`, owner);
      const hashes = proof.hashes.map((h) => Buffer.from(h, 'base64'));
      if (!verifier.verifyInclusion(record.leafIndex, size, verifier.leafHash(verifier.recordLeaf(record)), hashes, root))
        throw new Error(`${record.id} did not verify at size ${size}`);
      verified += 1;
    }
  return verified;
}

/**
 * Production's case, which the grown tree's synthetic right edge hides: proofs against the latest
 * checkpoint, whose size ends inside a block of real records (that partial block has no stored
 * level-8 hash). Inclusion of the sample and consistency from a random real size, both to the
 * real tree's size, signed before the tree is grown.
 */
async function realEdge({ base, bases, owner, real, sample, queries, round }) {
  const checkpoint = await signedAt(base, real);
  const verified = await verifiedInclusions(bases, owner, sample.slice(0, 20), real, checkpoint.root);
  const measure = besideCheckpoint;
  const inclusion = await alternating(
    bases,
    queries,
    round,
    measure((at, i) => api(at, 'GET', `/api/trail/proofs/inclusion?callId=${sample[i % sample.length].id}&treeSize=${real}`, owner)),
  );
  const consistency = await alternating(
    bases,
    queries,
    round,
    measure((at) => api(at, 'GET', `/api/trail/proofs/consistency?from=${1 + Math.floor(Math.random() * (real - 1))}&to=${real}`, owner)),
  );
  return { size: real, partialBlockLeaves: real % BLOCK, verified, inclusion, consistency };
}

export async function proofLatency({ db, base, owner, leaves, queries, grantIds, restore = true, baseline, round = 25 }) {
  const head = await db('trail_tree').where('id', 1).first('size', 'frontier');
  const real = Number(head.size);
  if (leaves <= real + 2 * BLOCK) throw new Error(`--leaves must exceed the real tree (${real}) by more than two blocks`);
  const bases = baseline ? { current: base, baseline } : { current: base };
  // A sample of real records (proven at the real size first, then at the large one).
  const sample = [];
  for (const grantId of grantIds.slice(0, 4))
    sample.push(...(await api(base, 'GET', `/api/grants/${grantId}/calls?limit=50`, owner)).items);
  const ids = sample.map((r) => r.id);
  const atRealEdge = await realEdge({ base, bases, owner, real, sample, queries, round });
  const started = performance.now();
  const synthetic = (lo, hi) =>
    nodesOf(lo, hi).map((node) => ({
      ...node,
      hash: require('node:crypto').createHash('sha256').update(`synthetic ${node.level}/${node.index}`).digest(),
    }));
  const firstFull = Math.ceil(real / BLOCK);
  const lastFull = Math.floor(leaves / BLOCK);
  // The real span's last block and the tree's last block: stored below level 8, as a dropped day's edge.
  const edges = [...synthetic(real, firstFull * BLOCK), ...synthetic(lastFull * BLOCK, leaves)];
  await db.raw(
    'insert into trail_hashes (level, idx, hash) select * from unnest(?::smallint[], ?::bigint[], ?::bytea[]) on conflict do nothing',
    [edges.map((n) => n.level), edges.map((n) => n.index), edges.map((n) => n.hash)],
  );
  if (real % BLOCK !== 0) {
    const node = { level: 8, index: Math.floor(real / BLOCK) };
    const halves = [
      { level: 7, index: node.index * 2 },
      { level: 7, index: node.index * 2 + 1 },
    ];
    const read = await store.treeReader(db)(halves);
    const hash = leafCode.nodeHash(read.get(`7/${halves[0].index}`), read.get(`7/${halves[1].index}`));
    await db.raw('insert into trail_hashes values (8, ?, ?) on conflict do nothing', [node.index, hash]);
  }
  await db.raw(
    `insert into trail_hashes (level, idx, hash) select 8, b, sha256(int8send(b)) from generate_series(?::bigint, ?::bigint) b on conflict do nothing`,
    [firstFull, lastFull - 1],
  );
  for (let level = 9; 2 ** level <= leaves; level += 1) {
    await db.raw(
      `insert into trail_hashes (level, idx, hash)
       select ?, a.idx / 2, sha256('\\x01'::bytea || a.hash || b.hash) from trail_hashes a
         join trail_hashes b on b.level = a.level and b.idx = a.idx + 1
        where a.level = ? and a.idx % 2 = 0 on conflict do nothing`,
      [level, level - 1],
    );
  }
  const frontierNodes = nodesOf(0, leaves);
  const hashes = await store.treeReader(db)(frontierNodes);
  await db.raw('update trail_tree set size = ?, frontier = ?::bytea[] where id = 1', [
    leaves,
    frontierNodes.map((n) => hashes.get(`${n.level}/${n.index}`)),
  ]);
  const built = Number(((performance.now() - started) / 1000).toFixed(1));
  const stored = Number((await db('trail_hashes').count({ n: '*' }).first()).n);
  // The service's checkpointer signs the grown tree within TRAIL_CHECKPOINT_MS.
  const checkpoint = await signedAt(base, leaves);
  // The sample proven at the large size by grantctl's own verifier code.
  const verified = await verifiedInclusions(bases, owner, sample, leaves, checkpoint.root);
  const measure = besideCheckpoint;
  const inclusion = await alternating(
    bases,
    queries,
    round,
    measure((at, i) => api(at, 'GET', `/api/trail/proofs/inclusion?callId=${ids[i % ids.length]}&treeSize=${leaves}`, owner)),
  );
  const fromReal = await alternating(
    bases,
    queries,
    round,
    measure((at) => api(at, 'GET', `/api/trail/proofs/consistency?from=${1 + Math.floor(Math.random() * real)}&to=${leaves}`, owner)),
  );
  const fromSynthetic = await alternating(
    bases,
    queries,
    round,
    measure((at) => {
      const from = (firstFull + 1 + Math.floor(Math.random() * (lastFull - firstFull - 1))) * BLOCK;
      return api(at, 'GET', `/api/trail/proofs/consistency?from=${from}&to=${leaves}`, owner);
    }),
  );
  // Bare round trips to Postgres from here, between the same moments: the floor under any request.
  const selectOne = [];
  for (let i = 0; i < queries; i += 1) {
    const started = performance.now();
    await db.raw('select 1');
    selectOne.push(performance.now() - started);
  }
  // How Postgres finds a real record's block (what an inclusion proof rebuilds its lower levels
  // from: the whole block where the service keeps complete blocks).
  const leaf = sample[0].leafIndex;
  const block = Math.floor(leaf / BLOCK) * BLOCK;
  const ranges = [[block, Math.min(block + BLOCK, real)]];
  const within = await store.checkTimesOf(db, ranges);
  console.log(`   -- the records of leaf ${leaf}'s block, checked within ${JSON.stringify(within)}:`);
  console.log(await leafRecords.callRecordsOfLeavesPlan(db, ranges, within));
  // The tree as it was: the synthetic hashes and the checkpoints past the real leaves gone.
  if (restore) {
    await db.raw('delete from trail_hashes where (idx + 1) * (1::bigint << level) > ?', [real]);
    await db.raw('delete from trail_checkpoints where size > ?', [real]);
    await db.raw('update trail_tree set size = ?, frontier = ?::bytea[] where id = 1', [real, head.frontier]);
  }
  return {
    note: `tree grown to ${leaves} leaves: ${real} real (with records), the rest synthetic stored hashes (levels >= 8); proofs served by the HTTP routes`,
    buildSeconds: built,
    storedHashes: stored,
    verifiedInclusions: verified,
    atRealEdge,
    inclusion,
    consistencyFromRealSize: fromReal,
    consistencyFromBlockSize: fromSynthetic,
    bareSelectOne: stats(selectOne),
  };
}
