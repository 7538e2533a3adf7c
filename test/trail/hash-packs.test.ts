/**
 * The tree's hashes of dropped days moved into packs of 256 (repositories/tree.ts packHashes):
 * proofs read exactly the same hashes before and after, only complete groups lying wholly before
 * the live days move, and packing again moves nothing.
 */
import { createHash } from 'node:crypto';
import { createDatabase, migrateToLatest, type Database } from '../../src/db/database';
import { packHashes, readNodes } from '../../src/trail/repositories/tree';
import { consistencyProof, inclusionProof, type ReadNodes } from '../../src/trail/tree/proofs';
import { ownDatabase } from '../support/own-database';

jest.setTimeout(120_000);
const database = ownDatabase('trail_hash_packs');
const GROUP = 256;
const LEVEL_8_SPAN = GROUP << 8; // the leaves a complete group of level-8 hashes covers
let db: Database;
const read: ReadNodes = (nodes) => readNodes(db, nodes);

const hashOf = (level: number, index: number) => createHash('sha256').update(`planted ${level}/${index}`).digest();

async function plant(level: number, indices: number[]) {
  await db.raw('insert into trail_hashes (level, idx, hash) select * from unnest(?::smallint[], ?::bigint[], ?::bytea[])', [
    indices.map(() => level),
    indices,
    indices.map((index) => hashOf(level, index)),
  ]);
}

const range = (lo: number, hi: number) => Array.from({ length: hi - lo }, (_, i) => lo + i);
const rows = async () => Number((await db('trail_hashes').count<{ count: string }[]>('* as count'))[0]!.count);
const packs = async () =>
  (await db('trail_hash_packs').orderBy(['level', 'first_idx']).select('level', 'first_idx')).map((p) => `${p.level}/${p.first_idx}`);

async function proofs() {
  const out: Buffer[][] = [];
  for (const [from, to] of [
    [GROUP, 100 * GROUP],
    [3 * GROUP, 512 * GROUP],
    [257 * GROUP, 590 * GROUP],
    [64 * GROUP, 128 * GROUP],
  ] as const)
    out.push(await consistencyProof(from, to, read));
  // A leaf of block 5, whose lower levels are kept as rows (a dropped day's edge), up to trees reading the packs.
  for (const size of [300 * GROUP, 590 * GROUP]) out.push(await inclusionProof(5 * GROUP + 44, size, read));
  return out.map((proof) => Buffer.concat(proof).toString('hex'));
}

beforeAll(async () => {
  await database.fresh();
  db = createDatabase(database.url, 2);
  await migrateToLatest(db);
  // Level 8: groups 0 and 1 complete, group 2 missing one hash. Level 9: group 0 complete, group 1 not.
  await plant(
    8,
    range(0, 3 * GROUP).filter((index) => index !== 600),
  );
  await plant(9, range(0, 384));
  for (let level = 10; level < 18; level += 1) await plant(level, range(0, 768 >> (level - 8)));
  for (let level = 0; level < 8; level += 1) await plant(level, range(5 << (8 - level), 6 << (8 - level)));
});

afterAll(async () => {
  await db?.destroy();
  await database.drop();
});

describe('packing the tree hashes', () => {
  it('moves only complete groups before the live days, keeps proofs byte-identical, and is idempotent', async () => {
    const before = await proofs();
    const planted = await rows();

    // The live days begin one leaf before group 1 of level 8 ends: that group stays rows.
    expect(await packHashes(db, 2 * LEVEL_8_SPAN - 1)).toBe(GROUP);
    expect(await packs()).toEqual(['8/0']);
    expect(await rows()).toBe(planted - GROUP);
    expect(await proofs()).toEqual(before);

    // Past it: group 1 of level 8 and group 0 of level 9 (the same leaves); level 8's group 2 misses a hash.
    expect(await packHashes(db, 2 * LEVEL_8_SPAN + 1000)).toBe(2 * GROUP);
    expect(await packs()).toEqual(['8/0', '8/256', '9/0']);
    expect(await rows()).toBe(planted - 3 * GROUP);
    expect(await proofs()).toEqual(before);

    // Far past every group: the incomplete ones still stay rows, and nothing moves twice.
    expect(await packHashes(db, 1 << 30)).toBe(0);
    expect(await packs()).toEqual(['8/0', '8/256', '9/0']);
    expect(await rows()).toBe(planted - 3 * GROUP);
    expect(await proofs()).toEqual(before);

    // Each pack holds its hashes in order.
    const pack = await db('trail_hash_packs').where({ level: 9, first_idx: 0 }).first<{ hashes: Buffer }>('hashes');
    expect(pack!.hashes.subarray(37 * 32, 38 * 32)).toEqual(hashOf(9, 37));
    const moved = await readNodes(db, [
      { level: 8, index: 300 },
      { level: 8, index: 600 },
      { level: 8, index: 601 },
    ]);
    expect([...moved.keys()].sort()).toEqual(['8/300', '8/601']);
    expect(moved.get('8/300')).toEqual(hashOf(8, 300));
  });
});
