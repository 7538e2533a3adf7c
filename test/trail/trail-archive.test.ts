/**
 * An archived day of the call trail checked whole, offline, against a signed checkpoint with a
 * pinned key (`grantctl trail verify-archive`): the export's records, its `.checkpoint` and its
 * `.proofs` (the day's leaf hashes and the border hashes that rebuild the root). A record edited,
 * removed or inserted in the archive is named; a checkpoint of another key is refused.
 */
import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { createDatabase, migrateToLatest, type Database } from '../../src/db/database';
import { exportTrailDay } from '../../src/trail/export';
import { dayTable, dropTrailDay } from '../../src/trail/repositories/days';
import { pruneCheckpoints } from '../../src/trail/repositories/tree';
import { keepDroppedSpan } from '../../src/trail/tree-drop-hashes';
import { trailSigner } from '../../src/trail/tree/note';
import { grantctl } from '../support/grantctl';
import { ManualClock } from '../support/clock';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';

jest.setTimeout(180_000);
const database = ownDatabase('trail_archive');
const work = mkdtempSync(path.join(tmpdir(), 'trail-archive-'));
const DAY = 86_400_000;
// Three days of checks, the middle one archived: its leaves have others' on both sides.
const clock = new ManualClock(Date.parse(`${new Date(Date.now() - 2 * DAY).toISOString().slice(0, 10)}T12:00:00Z`));
const day = new Date(clock.now() + DAY).toISOString().slice(0, 10);
const archive = path.join(work, `call-records-${day}.jsonl.gz`);

let db: Database;
let service: TestService;
let world: BrokerWorld;
let keyFile: string;
let env: { url: string; token: string };
let lines: string[];
let heldGrant: string;

const verifyArchive = (file: string, extra: string[] = []) =>
  grantctl(
    [
      'trail',
      'verify-archive',
      '--key',
      keyFile,
      '--archive',
      file,
      '--checkpoint',
      `${archive}.checkpoint`,
      '--proofs',
      `${archive}.proofs`,
      ...extra,
    ],
    env,
  );

/** An archive of these lines, beside the original's checkpoint and proofs. */
function tampered(name: string, edited: string[]): string {
  const file = path.join(work, name);
  writeFileSync(file, gzipSync(`${edited.join('\n')}\n`));
  return file;
}

async function checkpointSize(): Promise<number> {
  return Number((await service.http.get('/api/trail/checkpoint').expect(200)).text.split('\n')[1]);
}

beforeAll(async () => {
  await database.fresh();
  db = createDatabase(database.url, 2);
  await migrateToLatest(db);
  service = await startService({ DATABASE_URL: database.url, TRAIL_CHECKPOINT_MS: '100' }, { clock });
  world = await brokerWorld(service);
  env = { url: service.baseUrl, token: world.owner.token };
  const grantId = (await chainOf(service, world, 0, { tools: ['repos.read_file'] })).rootId;
  heldGrant = (await chainOf(service, world, 0, { tools: ['repos.read_file'] })).rootId;
  const check = async (i: number, on = grantId) => {
    clock.advance(1000);
    const res = await checkAs(service, world, on, world.agent, i % 4 === 3 ? { tool: 'repos.delete' } : {}).expect(200);
    if (res.body.decision === 'allow' && i % 2 === 0) {
      await service.http
        .post(`/api/broker/calls/${res.body.callId}/outcome`)
        .set(world.broker.auth)
        .send({ outcome: 'succeeded' })
        .expect(200);
    }
  };
  // The first day's checks alternate with a grant whose trail will be held when that day is dropped.
  for (let i = 0; i < 8; i += 1) await check(i >> 1, i % 2 ? heldGrant : grantId);
  clock.advance(DAY);
  for (let i = 0; i < 12; i += 1) await check(i);
  clock.advance(DAY);
  for (let i = 0; i < 5; i += 1) await check(i);
  const size = Number((await db('trail_tree').first('size')).size);
  for (let i = 0; i < 200 && (await checkpointSize()) < size; i += 1) await new Promise((r) => setTimeout(r, 50));
  keyFile = path.join(work, 'trail.key');
  writeFileSync(keyFile, (await service.http.get('/api/trail/key').expect(200)).text);
  const exported = await exportTrailDay(db, day, archive);
  expect(exported).toMatchObject({ checkpoint: expect.any(Number) });
  expect(exported.checkpoint).toBeLessThanOrEqual(size);
  lines = gunzipSync(readFileSync(archive)).toString('utf8').trim().split('\n');
  expect(lines.length).toBeGreaterThanOrEqual(12);
});

afterAll(async () => {
  await service?.close();
  await db?.destroy();
  await database.drop();
});

describe('grantctl trail verify-archive', () => {
  it('proves every record of a clean archive in its checkpoint, from the day’s leaves and a few border hashes', async () => {
    const proofs = JSON.parse(readFileSync(`${archive}.proofs`, 'utf8'));
    const records = lines.map((line) => JSON.parse(line));
    const leaves = records.flatMap((r) => [r.leafIndex, ...(r.outcomeLeafIndex === null ? [] : [r.outcomeLeafIndex])]);
    expect(proofs.leaves.map((leaf: [number, string]) => leaf[0])).toEqual([...leaves].sort((x, y) => x - y));
    expect(proofs.borders.length).toBeGreaterThanOrEqual(1);
    expect(proofs.borders.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(proofs.treeSize + 1)));
    const { code, stdout, stderr } = await grantctl(['trail', 'verify-archive', '--key', keyFile, '--archive', archive], env);
    expect(stderr).toBe('');
    expect(stdout).toBe(`${lines.length} records (${leaves.length} leaves) are in the checkpoint of size ${proofs.treeSize}\n`);
    expect(code).toBe(0);
  });

  it('names a record edited in the archive', async () => {
    const victim = JSON.parse(lines[3]!);
    const edited = [...lines];
    edited[3] = JSON.stringify({ ...victim, argsDigest: `sha256:${'0'.repeat(64)}` });
    const { code, stderr } = await verifyArchive(tampered('edited.jsonl.gz', edited));
    expect(stderr).toBe(`call ${victim.id} at leaf ${victim.leafIndex} does not match its leaf in the signed tree\n`);
    expect(code).toBe(1);
  });

  it('names the leaf of a record removed from the archive', async () => {
    const victim = JSON.parse(lines[5]!);
    const { code, stderr } = await verifyArchive(
      tampered(
        'removed.jsonl.gz',
        lines.filter((_, i) => i !== 5),
      ),
    );
    expect(stderr).toBe(`leaf ${victim.leafIndex} is in the signed tree, but no record of the archive holds it\n`);
    expect(code).toBe(1);
  });

  it('names a record inserted into the archive, at a leaf of its own or at another record’s', async () => {
    const model = JSON.parse(lines[2]!);
    const forged = { ...model, id: 'call_01kb0000000000000000000000', leafIndex: 999_999, outcomeLeafIndex: null };
    const appended = await verifyArchive(tampered('inserted.jsonl.gz', [...lines, JSON.stringify(forged)]));
    expect(appended).toMatchObject({ code: 1, stderr: `call ${forged.id} at leaf 999999 is not a leaf of the day in the signed tree\n` });
    const twin = { ...forged, leafIndex: model.leafIndex };
    const claimed = await verifyArchive(tampered('twin.jsonl.gz', [...lines, JSON.stringify(twin)]));
    expect(claimed.code).toBe(1);
    expect(claimed.stderr).toMatch(new RegExp(`^call ${twin.id} at leaf ${model.leafIndex} (claims a leaf another record|does not match)`));
  });

  it('refuses proofs edited to match an edited record, and a checkpoint of another key', async () => {
    const proofs = JSON.parse(readFileSync(`${archive}.proofs`, 'utf8'));
    proofs.leaves[0][1] = Buffer.alloc(32, 7).toString('base64');
    const forgedProofs = path.join(work, 'forged.proofs');
    writeFileSync(forgedProofs, JSON.stringify(proofs));
    const forged = await grantctl(['trail', 'verify-archive', '--key', keyFile, '--archive', archive, '--proofs', forgedProofs], env);
    expect(forged).toMatchObject({ code: 1, stderr: "not proven: the proofs do not rebuild the checkpoint's root\n" });

    const origin = readFileSync(keyFile, 'utf8').split('+')[0]!;
    const otherKey = path.join(work, 'other.key');
    const other = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    writeFileSync(otherKey, trailSigner(origin, other).verifierKey);
    const wrongKey = await grantctl(['trail', 'verify-archive', '--key', otherKey, '--archive', archive], env);
    expect(wrongKey).toMatchObject({ code: 1, stderr: expect.stringContaining('no valid signature of the pinned key') });
    // The same archive under another name still verifies with its files named.
    const copy = path.join(work, 'copy.jsonl.gz');
    copyFileSync(archive, copy);
    expect((await verifyArchive(copy)).code).toBe(0);
  });
});

describe('checkpoint retention', () => {
  it('keeps every checkpoint of the last day, and the last of each day before', async () => {
    const sizes = (await db('trail_checkpoints').orderBy('size').select('size')).map((row) => Number(row.size));
    expect(sizes.length).toBeGreaterThan(3);
    // Back-date them as if signed over three days: the first two a day apart, the rest today.
    const [a, b, c] = sizes as [number, number, number];
    await db.raw(`update trail_checkpoints set signed_at = now() - interval '3 days' where size in (?, ?)`, [a, b]);
    await db.raw(`update trail_checkpoints set signed_at = now() - interval '2 days' where size = ?`, [c]);
    const pruned = await pruneCheckpoints(db, new Date(Date.now() - DAY));
    expect(pruned).toBe(1);
    expect((await db('trail_checkpoints').orderBy('size').select('size')).map((row) => Number(row.size))).toEqual(
      sizes.filter((size) => size !== a),
    );
  });
});

describe('a day dropped', () => {
  // Read when the describe is declared: the clock stands at the first day's noon.
  const firstDay = new Date(clock.now()).toISOString().slice(0, 10);
  const lastDay = new Date(clock.now() + 2 * DAY).toISOString().slice(0, 10);
  const save = (name: string, text: string) => {
    writeFileSync(path.join(work, name), text);
    return path.join(work, name);
  };
  /** An auditor's check of one archived record, online proof and offline verification. */
  async function auditRecord(record: { id: string }) {
    const checkpoint = save('latest.note', (await service.http.get('/api/trail/checkpoint').expect(200)).text);
    const proof = await service.http.get(`/api/trail/proofs/inclusion?callId=${record.id}`).set(world.owner.auth);
    if (proof.status !== 200) return { status: proof.status, body: proof.body };
    const files = ['--key', keyFile, '--checkpoint', checkpoint, '--record', save('record.json', JSON.stringify(record))];
    return {
      status: 200,
      ...(await grantctl(['trail', 'verify', ...files, '--proof', save('proof.json', JSON.stringify(proof.body))], env)),
    };
  }

  it('by retention keeps proving the records kept, with a few hashes standing for the day', async () => {
    expect(new Date(clock.now()).toISOString().slice(0, 10)).toBe(lastDay);
    const hashesBefore = Number((await db('trail_hashes').count({ n: '*' }).first())!.n);
    const held = (await service.http.get(`/api/grants/${heldGrant}/calls`).set(world.owner.auth).expect(200)).body.items;
    expect(held).toHaveLength(4);
    const kept = await keepDroppedSpan(db, firstDay, [heldGrant]);
    await dropTrailDay(db, firstDay, [heldGrant]);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(8);
    expect(Number((await db('trail_hashes').count({ n: '*' }).first())!.n)).toBe(hashesBefore + kept);
    for (const line of [lines[0]!, lines.at(-1)!]) {
      const record = JSON.parse(line);
      expect(await auditRecord(record)).toMatchObject({ status: 200, code: 0, stdout: expect.stringContaining(`call ${record.id}`) });
    }
    // A held record of the dropped day: its record's leaf and its outcome's, proven and verified offline.
    const withOutcome = held.find((r: { outcomeLeafIndex: number | null }) => r.outcomeLeafIndex !== null);
    expect(await auditRecord(held[0])).toMatchObject({ status: 200, code: 0 });
    const outcome = await service.http
      .get(`/api/trail/proofs/inclusion?callId=${withOutcome.id}&leaf=outcome`)
      .set(world.owner.auth)
      .expect(200);
    expect(outcome.body.leafIndex).toBe(withOutcome.outcomeLeafIndex);
    const note = save('latest.note', (await service.http.get('/api/trail/checkpoint').expect(200)).text);
    const files = ['--key', keyFile, '--checkpoint', note, '--record', save('held.json', JSON.stringify(withOutcome))];
    expect(await grantctl(['trail', 'verify', ...files, '--proof', save('outcome.json', JSON.stringify(outcome.body))], env)).toMatchObject(
      {
        code: 0,
        stdout: expect.stringContaining(`call ${withOutcome.id}'s outcome at leaf ${withOutcome.outcomeLeafIndex} is in the checkpoint`),
      },
    );
    // No outcome reported: no outcome leaf to prove.
    const pending = held.find((r: { outcomeLeafIndex: number | null }) => r.outcomeLeafIndex === null);
    await service.http.get(`/api/trail/proofs/inclusion?callId=${pending.id}&leaf=outcome`).set(world.owner.auth).expect(404);
    // The archive of the day after still verifies offline, as it always will.
    expect((await grantctl(['trail', 'verify-archive', '--key', keyFile, '--archive', archive], env)).code).toBe(0);
  });

  it('out of turn (its partition dropped by hand) leaves records whose proofs the service can no longer build', async () => {
    await db.raw('drop table ??', [dayTable(lastDay)]);
    // The records of the day before share 256-leaf blocks with the dropped ones: their leaves are gone with
    // no hash kept in their place, so the service answers, for each, which leaf it cannot rebuild.
    const record = JSON.parse(lines.at(-1)!);
    const audited = await auditRecord(record);
    expect(audited.status).toBe(409);
    expect(JSON.stringify(audited.body)).toContain('not_provable');
    expect(JSON.stringify(audited.body)).toMatch(/leaf \d+ has no record and no stored hash covers it/);
    // Consistency from the checkpoint the archive holds up to the latest needs them too.
    const archived = Number(readFileSync(`${archive}.checkpoint`, 'utf8').split('\n')[1]);
    const latest = Number((await service.http.get('/api/trail/checkpoint').expect(200)).text.split('\n')[1]);
    if (archived < latest) {
      const consistency = await service.http.get(`/api/trail/proofs/consistency?from=${archived}&to=${latest}`);
      expect(consistency.status).toBe(409);
      expect(JSON.stringify(consistency.body)).toContain('not_provable');
    }
  });
});
