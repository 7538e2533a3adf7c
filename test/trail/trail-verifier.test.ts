/**
 * The trail's Merkle tree checked by a verifier nobody here wrote: Go's golang.org/x/mod/sumdb
 * (tlog for proofs and tree hashes, note for the signed checkpoint), in test/go/trail-verifier,
 * against two service instances appending at once, then against each tampering an operator with
 * the database could try. The leaves are rebuilt here from the records as the API reads them,
 * by the contract's rule (RFC 8785 JSON of ten members), not by the service's code.
 */
import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { canonicalize } from 'json-canonicalize';
import { createDatabase, migrateToLatest, type Database } from '../../src/db/database';
import { uuidOf } from '../../src/trail/repositories/codec';
import { createTrailDay } from '../../src/trail/repositories/days';
import { trailSigner } from '../../src/trail/tree/note';
import { listedCallsOf } from '../support/call-records';
import { grantctl } from '../support/grantctl';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';

jest.setTimeout(240_000);
const run = promisify(execFile);
const database = ownDatabase('trail_tree');
const work = mkdtempSync(path.join(tmpdir(), 'trail-verifier-'));
const verifierBin = path.join(work, 'trail-verifier');
const DAY = 86_400_000;
// Both instances' clock: a day behind the wall clock until the last test moves it to today, so the
// trail holds records of two days (the last test drops the first day's partition out of turn).
const clock = { behind: DAY, now: () => Date.now() - clock.behind };

let db: Database;
let a: TestService;
let b: TestService;
let world: BrokerWorld;
let grantId: string;
let key: string;

interface Leaf {
  callId?: string;
  leafIndex: number;
  leaf: string;
}

async function verify(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(verifierBin, ['-url', a.baseUrl, '-key', key, '-token', world.owner.token, ...args]);
    return { code: 0, out: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, out: failed.stdout };
  }
}

/** Every record of the grant, as the API reads them, newest first. */
const recordsOf = () => listedCallsOf(a, world.owner.auth, grantId);

/** Every leaf of the grant's records (and their outcomes), rebuilt from the API's records alone. */
async function leavesOf(): Promise<Leaf[]> {
  const leaves: Leaf[] = [];
  for (const r of await recordsOf()) {
    if (r.leafIndex === null) continue; // written with TRAIL_TREE=off: no leaf
    const record = {
      callId: r.id,
      grantId: r.grantId,
      rootId: r.rootId,
      tool: r.tool,
      argsDigest: r.argsDigest,
      decision: r.decision,
      reason: r.decision === 'approval_required' ? 'approval_required' : r.reason,
      approvalId: r.approvalId,
      requestedAt: r.requestedAt,
      principal: r.principal,
    };
    leaves.push({ callId: r.id as string, leafIndex: r.leafIndex as number, leaf: Buffer.from(canonicalize(record)).toString('base64') });
    if (r.outcomeLeafIndex !== null) {
      const outcome = { callId: r.id, outcome: r.outcome, completedAt: r.completedAt };
      leaves.push({ leafIndex: r.outcomeLeafIndex as number, leaf: Buffer.from(canonicalize(outcome)).toString('base64') });
    }
  }
  return leaves.sort((x, y) => x.leafIndex - y.leafIndex);
}

function leavesFile(leaves: Leaf[], name: string): string {
  const file = path.join(work, name);
  writeFileSync(file, JSON.stringify(leaves));
  return file;
}

async function checkpointSize(): Promise<number> {
  const note = (await a.http.get('/api/trail/checkpoint').expect(200)).text;
  return Number(note.split('\n')[1]);
}

async function coveredUpTo(size: number): Promise<void> {
  for (let i = 0; i < 200 && (await checkpointSize()) < size; i += 1) await new Promise((r) => setTimeout(r, 50));
  expect(await checkpointSize()).toBeGreaterThanOrEqual(size);
}

async function treeSize(): Promise<number> {
  return Number((await db('trail_tree').first('size')).size);
}

/** Checks through both instances at once: allowed ones and denied ones (a tool the grant lacks). */
async function load(n: number): Promise<number[]> {
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) => checkAs(i % 2 ? b : a, world, grantId, world.agent, i % 5 === 0 ? { tool: 'repos.delete' } : {})),
  );
  // Every answer is a decision with a receipt; any other answer is named by its status and code.
  expect(answers.filter((res) => res.status !== 200).map((res) => ({ status: res.status, code: res.body.code }))).toEqual([]);
  return answers.map((res) => {
    expect(res.body.receipt).toEqual({ leafIndex: expect.any(Number) });
    return res.body.receipt.leafIndex as number;
  });
}

beforeAll(async () => {
  await database.fresh();
  db = createDatabase(database.url, 2);
  await migrateToLatest(db);
  // The partition of the instances' day (the migration made today's and the next days'), made before they start.
  await createTrailDay(db, new Date(clock.now()).toISOString().slice(0, 10));
  const settings = { DATABASE_URL: database.url, TRAIL_CHECKPOINT_MS: '100' };
  [a, b] = await Promise.all([startService(settings, { clock }), startService(settings, { clock })]);
  world = await brokerWorld(a);
  grantId = (await chainOf(a, world, 0, { tools: ['repos.read_file'] })).rootId;
  key = (await a.http.get('/api/trail/key').expect(200)).text.trim();
  await run('go', ['build', '-o', verifierBin, '.'], { cwd: path.join(__dirname, '../go/trail-verifier') });
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await db?.destroy();
  await database.drop();
});

describe('the trail as Go’s transparency-log code reads it', () => {
  let first: string;

  it('takes each record of two instances appending under load exactly once, in one tree', async () => {
    const receipts = [...(await load(60)), ...(await load(40))];
    const size = await treeSize();
    // No fork and no gap: the receipts are distinct leaves of the one tree, which holds nothing else.
    expect(new Set(receipts).size).toBe(100);
    expect(size).toBe(100);
    expect([...receipts].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect((await b.http.get('/api/trail/key').expect(200)).text.trim()).toBe(key);
  });

  it('verifies the signed checkpoint, every inclusion proof and the tree hash', async () => {
    const calls = (await a.http.get(`/api/grants/${grantId}/calls?limit=5`).set(world.owner.auth).expect(200)).body.items;
    const allowed = calls.find((c: { decision: string }) => c.decision === 'allow');
    await a.http.post(`/api/broker/calls/${allowed.id}/outcome`).set(world.broker.auth).send({ outcome: 'succeeded' }).expect(200);
    await coveredUpTo(await treeSize());
    first = path.join(work, 'first.note');
    const leaves = await leavesOf();
    expect(leaves).toHaveLength(101);
    const { code, out } = await verify(['-leaves', leavesFile(leaves, 'all.json'), '-complete', '-save', first]);
    expect(out).not.toMatch(/FAIL/);
    expect(out.match(/^ok inclusion/gm)).toHaveLength(100);
    expect(out).toMatch(/^ok tree hash of 101 leaves$/m);
    expect(code).toBe(0);
  });

  it('proves the grown tree consistent with the checkpoint an auditor kept', async () => {
    await load(10);
    await coveredUpTo(await treeSize());
    const { code, out } = await verify(['-old', first]);
    expect(out).toMatch(/^ok consistency with the older checkpoint$/m);
    expect(code).toBe(0);
  });

  it('proves a record and the grown tree with grantctl, offline, and names what it cannot prove', async () => {
    const save = (name: string, text: string) => {
      writeFileSync(path.join(work, name), text);
      return path.join(work, name);
    };
    const env = { url: a.baseUrl, token: world.owner.token };
    const keyFile = save('key.txt', `${key}\n`);
    const newer = save('newer.note', (await a.http.get('/api/trail/checkpoint').expect(200)).text);
    const size = Number(readFileSync(newer, 'utf8').split('\n')[1]);
    const [record] = (await a.http.get(`/api/grants/${grantId}/calls?limit=1`).set(world.owner.auth).expect(200)).body.items;
    const proof = (await a.http.get(`/api/trail/proofs/inclusion?callId=${record.id}&treeSize=${size}`).set(world.owner.auth).expect(200))
      .body;
    const files = ['--key', keyFile, '--checkpoint', newer, '--proof', save('proof.json', JSON.stringify(proof))];
    const proven = await grantctl(['trail', 'verify', ...files, '--record', save('record.json', JSON.stringify(record))], env);
    expect(proven).toMatchObject({
      code: 0,
      stdout: `call ${record.id} at leaf ${record.leafIndex} is in the checkpoint of size ${size}\n`,
    });
    const altered = save('altered.json', JSON.stringify({ ...record, tool: 'repos.delete' }));
    const refused = await grantctl(['trail', 'verify', ...files, '--record', altered], env);
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`call ${record.id} at leaf ${record.leafIndex} is not proven`),
    });

    const oldSize = Number(readFileSync(first, 'utf8').split('\n')[1]);
    const consistency = (await a.http.get(`/api/trail/proofs/consistency?from=${oldSize}&to=${size}`).expect(200)).body;
    const proofFile = save('consistency.json', JSON.stringify(consistency));
    const extends_ = await grantctl(['trail', 'consistency', '--key', keyFile, '--old', first, '--new', newer, '--proof', proofFile], env);
    expect(extends_).toMatchObject({ code: 0, stdout: `consistent from size ${oldSize} to size ${size}\n` });
    const rolledBack = await grantctl(
      ['trail', 'consistency', '--key', keyFile, '--old', newer, '--new', first, '--proof', proofFile],
      env,
    );
    expect(rolledBack).toMatchObject({ code: 1, stderr: expect.stringContaining('rollback') });
    const otherKey = save(
      'other-key.txt',
      trailSigner(key.split('+')[0]!, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString())
        .verifierKey,
    );
    const wrongKey = await grantctl(['trail', 'consistency', '--key', otherKey, '--old', first, '--new', newer, '--proof', proofFile], env);
    expect(wrongKey).toMatchObject({ code: 1, stderr: expect.stringContaining('no valid signature of the pinned key') });
  });

  it('catches a record changed in Postgres', async () => {
    const [victim] = await leavesOf();
    await db.raw(`update call_records set args_digest = sha256('forged') where leaf_index = ?`, [victim!.leafIndex]);
    try {
      const { code, out } = await verify(['-leaves', leavesFile(await leavesOf(), 'changed.json')]);
      expect(out).toMatch(new RegExp(`^FAIL inclusion of ${victim!.callId} at ${victim!.leafIndex}`, 'm'));
      expect(code).toBe(1);
    } finally {
      await db.raw(`update call_records set args_digest = ? where leaf_index = ?`, [
        Buffer.from(JSON.parse(Buffer.from(victim!.leaf, 'base64').toString()).argsDigest.slice(7), 'hex'),
        victim!.leafIndex,
      ]);
    }
  });

  it('catches a record deleted', async () => {
    await db.raw('create table deleted_record as select * from call_records where leaf_index = 3');
    await db.raw('delete from call_records where leaf_index = 3');
    try {
      const { code, out } = await verify(['-leaves', leavesFile(await leavesOf(), 'deleted.json'), '-complete']);
      expect(out).toMatch(/^FAIL tree hash of \d+ leaves: leaf 3 is missing from the records$/m);
      expect(code).toBe(1);
    } finally {
      await db.raw('insert into call_records select * from deleted_record');
      await db.raw('drop table deleted_record');
    }
  });

  it('catches a checkpoint re-signed with another key', async () => {
    const latest = await db('trail_checkpoints').orderBy('size', 'desc').first();
    const [origin, size, root] = (latest.note as string).split('\n');
    const other = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const forged = trailSigner(origin!, other).sign(Number(size), Buffer.from(root!, 'base64'));
    await db('trail_checkpoints').where('size', latest.size).update({ note: forged });
    try {
      const { code, out } = await verify([]);
      expect(out).toMatch(/^FAIL checkpoint signature: note has no verifiable signatures$/m);
      expect(code).toBe(1);
    } finally {
      await db('trail_checkpoints').where('size', latest.size).update({ note: latest.note });
    }
  });

  it('catches a leaf inserted into history', async () => {
    const kept = path.join(work, 'kept.note');
    await coveredUpTo(await treeSize());
    expect((await verify(['-save', kept])).code).toBe(0);
    const leaves = await leavesOf();
    const hash = (leaf: Buffer) =>
      createHash('sha256')
        .update(Buffer.from([0]))
        .update(leaf)
        .digest();
    const forged = hash(Buffer.from(canonicalize({ callId: 'call_forged', outcome: 'succeeded', completedAt: new Date().toISOString() })));
    const rebuild = async (hashes: Buffer[]) => {
      await db.raw('truncate trail_hashes');
      await db.raw(`update trail_tree set size = 0, frontier = '{}'`);
      await db.raw('select trail_append(?::bytea[])', [hashes]);
    };
    const original = leaves.map((l) => hash(Buffer.from(l.leaf, 'base64')));
    await rebuild([...original.slice(0, 5), forged, ...original.slice(5)]);
    try {
      await coveredUpTo(leaves.length + 1);
      const { code, out } = await verify(['-old', kept]);
      expect(out).toMatch(/^FAIL consistency with the older checkpoint/m);
      expect(code).toBe(1);
    } finally {
      await db('trail_checkpoints').where('size', '>', leaves.length).delete();
      await rebuild(original);
    }
  });

  it('catches a rollback to an older checkpoint presented as the newest', async () => {
    const older = { head: await db('trail_tree').first(), size: await treeSize() };
    await load(10);
    await coveredUpTo(await treeSize());
    const newest = path.join(work, 'newest.note');
    expect((await verify(['-save', newest])).code).toBe(0);
    // A backup of before those checks restored: the tree, and the checkpoints it had.
    await db.raw('delete from trail_hashes where (idx + 1) * (1::bigint << level) > ?', [older.size]);
    await db('trail_tree').update({ size: older.head.size, frontier: older.head.frontier });
    await db('trail_checkpoints').where('size', '>', older.size).delete();
    expect(await checkpointSize()).toBe(older.size);
    const { code, out } = await verify(['-old', newest]);
    expect(out).toMatch(/^FAIL consistency with the older checkpoint: rollback/m);
    expect(code).toBe(1);
  });
});

describe('TRAIL_TREE=off (the benchmark baseline)', () => {
  it('writes records with no leaf and answers with no receipt', async () => {
    const off = await startService({ DATABASE_URL: database.url, TRAIL_TREE: 'off' });
    try {
      const size = await treeSize();
      const res = await checkAs(off, world, grantId, world.agent).expect(200);
      expect(res.body).toMatchObject({ decision: 'allow' });
      expect(res.body).not.toHaveProperty('receipt');
      const done = await off.http.post(`/api/broker/calls/${res.body.callId}/outcome`).set(world.broker.auth).send({ outcome: 'failed' });
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ leafIndex: null, outcomeLeafIndex: null });
      expect(done.body).not.toHaveProperty('receipt');
      expect(await treeSize()).toBe(size);
    } finally {
      await off.close();
    }
  });
});

describe('the proof routes', () => {
  it('answers consistency between sizes, and 400 for sizes that have none', async () => {
    const size = await checkpointSize();
    expect((await a.http.get(`/api/trail/proofs/consistency?from=${size}&to=${size}`).expect(200)).body).toEqual({ hashes: [] });
    await a.http.get(`/api/trail/proofs/consistency?from=0&to=${size}`).expect(400);
    await a.http.get(`/api/trail/proofs/consistency?from=${size}&to=1`).expect(400);
    await a.http.get('/api/trail/proofs/consistency?from=1&to=1e999').expect(400);
    await a.http.get(`/api/trail/proofs/consistency?from=1&to=${size + 1000}`).expect(409);
  });

  it('shows a call’s inclusion only to whoever may read its grant', async () => {
    // After the rollback above, the newest calls are past the tree the checkpoints sign: not proven.
    const calls = (await a.http.get(`/api/grants/${grantId}/calls?limit=200`).set(world.owner.auth).expect(200)).body.items;
    const [newest, call] = [calls[0], calls.at(-1)];
    const unproven = await a.http.get(`/api/trail/proofs/inclusion?callId=${newest.id}`).set(world.owner.auth).expect(409);
    expect(unproven.body.code ?? unproven.body.type).toMatch(/not_in_checkpoint/);
    const other = await brokerWorld(a);
    const url = `/api/trail/proofs/inclusion?callId=${call.id}`;
    await a.http.get(url).expect(401);
    await a.http.get(url).set(other.owner.auth).expect(404);
    const proof = (await a.http.get(url).set(world.owner.auth).expect(200)).body;
    expect(proof).toMatchObject({ leafIndex: call.leafIndex, treeSize: expect.any(Number) });
    const missing = await a.http
      .get(`${url}&treeSize=${proof.treeSize + 12345}`)
      .set(world.owner.auth)
      .expect(409);
    expect(missing.body.code ?? missing.body.type).toMatch(/not_in_checkpoint/);
  });
});

describe('a day’s partition dropped out of turn (destructive: the last test of the file)', () => {
  const save = (name: string, text: string) => {
    writeFileSync(path.join(work, name), text);
    return path.join(work, name);
  };
  const latestNote = async (name: string) => save(name, (await a.http.get('/api/trail/checkpoint').expect(200)).text);
  const sizeOf = (note: string) => Number(readFileSync(note, 'utf8').split('\n')[1]);
  const tableOf = async (callId: unknown) =>
    (
      await db.raw<{ rows: Array<{ table: string }> }>(
        `select r.tableoid::regclass::text as table from call_records r where r.id = ?::uuid`,
        [uuidOf('call', callId as string)],
      )
    ).rows.map((row) => row.table);

  it('leaves nothing across the dropped leaves proven: Go’s verifier and grantctl fail, and the first missing leaf is named', async () => {
    const env = { url: a.baseUrl, token: world.owner.token };
    const keyFile = save('drop-key.txt', `${key}\n`);
    // Records of a second day: the instances' clock moves to today.
    clock.behind = 0;
    const yesterdays = await recordsOf();
    await load(10);
    await coveredUpTo(await treeSize());
    const todays = (await recordsOf()).filter((r) => !yesterdays.some((y) => y.id === r.id));
    expect(todays).toHaveLength(10);
    const victim = yesterdays.find((r) => r.leafIndex === 0)!;
    const kept = todays.find((r) => r.decision === 'allow')!;
    const [dropped] = await tableOf(victim.id);
    expect(dropped).toMatch(/^call_records_\d{8}$/);
    expect(await tableOf(kept.id)).not.toContain(dropped);

    // The auditor keeps the checkpoint of before the drop, in which every record was provable.
    const before = path.join(work, 'before-drop.note');
    expect((await verify(['-save', before])).code).toBe(0);
    const oldSize = sizeOf(before);
    // A power of two would be proven by the new leaves alone; this size needs the old ones.
    expect(oldSize & (oldSize - 1)).not.toBe(0);
    for (const record of [victim, kept]) {
      await a.http.get(`/api/trail/proofs/inclusion?callId=${record.id}&treeSize=${oldSize}`).set(world.owner.auth).expect(200);
    }

    await db.raw('drop table ??', [dropped!]);
    // The tree keeps growing over the gap: appending needs no record.
    await load(10);
    await coveredUpTo(await treeSize());
    const newer = await latestNote('after-drop.note');
    const newSize = sizeOf(newer);
    expect(newSize).toBeGreaterThan(oldSize);

    // Go's verifier: the grown tree cannot be proven to extend the kept checkpoint.
    const consistency = await verify(['-old', before]);
    expect(consistency.out).toMatch(
      /^FAIL consistency with the older checkpoint: GET \S+: 409 not_provable: leaf \d+ has no record and no stored hash covers it$/m,
    );
    expect(consistency.out).not.toMatch(/^ok consistency/m);
    expect(consistency.code).toBe(1);

    // The dropped record is gone for its auditor; a kept one's proof crosses the dropped leaves.
    const gone = await a.http.get(`/api/trail/proofs/inclusion?callId=${victim.id}`).set(world.owner.auth).expect(404);
    expect(gone.body.code).toBe('not_found');
    const unprovable = await a.http.get(`/api/trail/proofs/inclusion?callId=${kept.id}`).set(world.owner.auth).expect(409);
    expect(unprovable.body).toMatchObject({ code: 'not_provable', detail: expect.stringMatching(/^leaf \d+ has no record/) });

    // Go's verifier over every record left: no inclusion proven, and the tree rebuild names leaf 0.
    const leaves = await leavesOf();
    expect(leaves.some((l) => l.leafIndex === 0)).toBe(false);
    const full = await verify(['-leaves', leavesFile(leaves, 'after-drop.json'), '-complete']);
    expect(full.out).toMatch(new RegExp(`^FAIL inclusion of ${kept.id} at ${kept.leafIndex}: GET \\S+: 409 not_provable: leaf \\d+`, 'm'));
    expect(full.out).not.toMatch(/^ok inclusion/m);
    expect(full.out).toMatch(new RegExp(`^FAIL tree hash of ${newSize} leaves: leaf 0 is missing from the records$`, 'm'));
    expect(full.code).toBe(1);

    // grantctl, given what the service answers in place of each proof, proves nothing either.
    const consistencyAnswer = await a.http.get(`/api/trail/proofs/consistency?from=${oldSize}&to=${newSize}`).expect(409);
    const files = (proof: object, name: string) => ['--key', keyFile, '--proof', save(name, JSON.stringify(proof))];
    const extends_ = await grantctl(
      ['trail', 'consistency', '--old', before, '--new', newer, ...files(consistencyAnswer.body, 'c.json')],
      env,
    );
    expect(extends_).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(
        `not proven consistent from size ${oldSize} to size ${newSize}: the service gave no proof (not_provable: leaf`,
      ),
    });
    for (const [record, answer] of [
      [kept, unprovable],
      [victim, gone],
    ] as const) {
      const recordFile = save('drop-record.json', JSON.stringify(record));
      const verified = await grantctl(
        ['trail', 'verify', '--checkpoint', newer, '--record', recordFile, ...files(answer.body, 'i.json')],
        env,
      );
      expect(verified).toMatchObject({
        code: 1,
        stderr: expect.stringContaining(
          `call ${String(record.id)} at leaf ${String(record.leafIndex)} is not proven in the checkpoint of size ${newSize}: the service gave no proof (${answer.body.code as string}:`,
        ),
      });
    }
  });
});
