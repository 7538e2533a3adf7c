/**
 * Complete 256-leaf blocks kept for proofs (src/speedups/proof-blocks.ts): what is kept is only
 * what the tree committed to, and a kept block never outlives a record of it. The service runs
 * with its speed-ups on (the cache in use), the reader is also driven directly with a cache this
 * test can look into.
 */
import { createDatabase, migrateToLatest, type Database } from '../../src/db/database';
import { checkTimesAround, treeReader, type BlockCache, type KeptBlock, type KeptTail } from '../../src/trail/tree-store';
import { nodesOf, rootAt } from '../../src/trail/tree/proofs';
import { leafHash, openCheckpoint, recordLeaf, verifyInclusion } from '../../clients/grantctl/src/trail-proofs';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { listedCallsOf } from '../support/call-records';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';

jest.setTimeout(180_000);
const database = ownDatabase('trail_proof_blocks');

let db: Database;
let service: TestService;
let world: BrokerWorld;
let grantId: string;
type Item = { id: string; leafIndex: number } & Record<string, unknown>;
let records: Item[];

function mapCache(): BlockCache & { blocks: Map<number, KeptBlock>; kept: Map<number, KeptTail> } {
  const blocks = new Map<number, KeptBlock>();
  const kept = new Map<number, KeptTail>();
  return {
    blocks,
    kept,
    get: (b) => blocks.get(b),
    set: (b, l) => void blocks.set(b, l),
    delete: (b) => void blocks.delete(b),
    tails: { get: (b) => kept.get(b), set: (b, t) => void (t ? kept.set(b, t) : kept.delete(b)) },
  };
}

async function checkpoint() {
  const key = (await service.http.get('/api/trail/key').expect(200)).text.trim();
  return openCheckpoint((await service.http.get('/api/trail/checkpoint').expect(200)).text, key);
}

const proofOf = (record: Item) => service.http.get(`/api/trail/proofs/inclusion?callId=${record.id}`).set(world.owner.auth);

/** The lower nodes an inclusion proof of this leaf reads: its siblings inside its block. */
const siblings = (leaf: number) => Array.from({ length: 8 }, (_, level) => ({ level, index: (leaf >> level) ^ 1 }));

/** Deletes a record for the time of `during`, then puts it back. */
async function without(record: Item, during: () => Promise<void>) {
  await db.raw('create table kept_record as select * from call_records where leaf_index = ?', [record.leafIndex]);
  await db.raw('delete from call_records where leaf_index = ?', [record.leafIndex]);
  try {
    await during();
  } finally {
    await db.raw('insert into call_records select * from kept_record');
    await db.raw('drop table kept_record');
  }
}

beforeAll(async () => {
  await database.fresh();
  db = createDatabase(database.url, 2);
  await migrateToLatest(db);
  service = await startService({ DATABASE_URL: database.url, TRAIL_CHECKPOINT_MS: '100', DATABASE_POOL_MAX: '4' });
  world = await brokerWorld(service);
  grantId = (await chainOf(service, world, 0, { tools: ['repos.read_file'] })).rootId;
  // Two complete blocks and part of a third: checks only, a leaf each.
  for (let batch = 0; batch < 12; batch += 1)
    await Promise.all(Array.from({ length: 50 }, () => checkAs(service, world, grantId, world.agent).expect(200)));
  const size = Number((await db('trail_tree').first('size')).size);
  expect(size).toBeGreaterThanOrEqual(600);
  for (let i = 0; i < 200 && (await checkpoint()).size < size; i += 1) await new Promise((r) => setTimeout(r, 50));
  records = await listedCallsOf<Item>(service, world.owner.auth, grantId);
  records.sort((x, y) => x.leafIndex - y.leafIndex);
});

afterAll(async () => {
  await service?.close();
  await db?.destroy();
  await database.drop();
});

describe('a complete block kept for proofs', () => {
  it('is kept once its leaves hash to the stored level-8 hash, and gives the same hashes as the records', async () => {
    const cache = mapCache();
    const nodes = siblings(records[5]!.leafIndex);
    const plain = await treeReader(db)(nodes);
    expect(await treeReader(db, cache)(nodes)).toEqual(plain);
    expect([...cache.blocks.keys()]).toEqual([0]);
    // With when its records were checked, to look for them there again without reading the checkpoints.
    expect(cache.blocks.get(0)!.within?.to).toBeInstanceOf(Date);
    // Taken from the cache now: the same hashes.
    expect(await treeReader(db, cache)(nodes)).toEqual(plain);
    // The block the tree has not completed yet is never kept.
    const last = records.at(-1)!;
    await treeReader(db, cache)(siblings(last.leafIndex).filter((node) => (node.index + 1) << node.level <= records.length));
    expect(cache.blocks.has(Math.floor(last.leafIndex / 256))).toBe(false);
  });

  it('is found, and kept, when the hint of where its records are misses them: the hint is tried first, never trusted', async () => {
    const cache = mapCache();
    const nodes = siblings(records[7]!.leafIndex);
    const plain = await treeReader(db)(nodes);
    const far = new Date(Date.UTC(2001, 0, 1));
    const missed = { block: 0, within: { from: far, to: new Date(far.getTime() + 3_600_000) } };
    expect(await treeReader(db, undefined, missed)(nodes)).toEqual(plain);
    expect(await treeReader(db, cache, missed)(nodes)).toEqual(plain);
    // Kept with the span the records were found in, not the hint's.
    expect(cache.blocks.get(0)!.within?.to?.getTime()).toBeGreaterThan(far.getTime() + 3_600_000);
    // A hint that holds them finds them at once, and the block is kept with it.
    const around = checkTimesAround(records[7]!.leafIndex, new Date(records[7]!.requestedAt as string));
    const hinted = mapCache();
    expect(await treeReader(db, hinted, around)(nodes)).toEqual(plain);
    expect(hinted.blocks.get(0)!.within).toEqual(around.within);
  });

  it('is not kept while a record of it was changed: its leaves no longer hash to the stored hash', async () => {
    const cache = mapCache();
    const victim = records[300]!;
    const digest = await db('call_records').where('leaf_index', victim.leafIndex).first('args_digest');
    await db.raw(`update call_records set args_digest = sha256('forged') where leaf_index = ?`, [victim.leafIndex]);
    try {
      await treeReader(db, cache)(siblings(records[301]!.leafIndex));
      expect(cache.blocks.size).toBe(0);
    } finally {
      await db('call_records').where('leaf_index', victim.leafIndex).update({ args_digest: digest.args_digest });
    }
  });

  it('is no longer used once a record of it is deleted: the proof names the leaf gone, as without a cache', async () => {
    const cache = mapCache();
    const [kept, victim] = [records[10]!, records[20]!];
    await treeReader(db, cache)(siblings(kept.leafIndex));
    expect(cache.blocks.has(0)).toBe(true);
    await without(victim, async () => {
      await expect(treeReader(db, cache)(siblings(kept.leafIndex))).rejects.toMatchObject({ leafIndex: victim.leafIndex });
      expect(cache.blocks.has(0)).toBe(false);
    });
  });

  it('in the service: proven again from the cache, then refused once a record of the block is gone, then proven again', async () => {
    const [kept, victim] = [records[30]!, records[40]!];
    const signed = await checkpoint();
    const verified = (hashes: string[]) =>
      verifyInclusion(
        kept.leafIndex,
        signed.size,
        leafHash(recordLeaf(kept as never)),
        hashes.map((hash) => Buffer.from(hash, 'base64')),
        signed.root,
      );
    const first = (await proofOf(kept).expect(200)).body;
    expect(first.treeSize).toBe(signed.size);
    expect(verified(first.hashes)).toBe(true);
    expect((await proofOf(kept).expect(200)).body).toEqual(first);
    await without(victim, async () => {
      const refused = await proofOf(kept).expect(409);
      expect(refused.body).toMatchObject({
        code: 'not_provable',
        detail: `leaf ${victim.leafIndex} has no record and no stored hash covers it`,
      });
      expect((await proofOf(victim).expect(404)).body.code).toBe('not_found');
    });
    // Nothing was appended since: the same tree, the same proof.
    expect((await proofOf(kept).expect(200)).body).toEqual(first);
  });
});

describe('the partial last block at a signed size, kept for proofs', () => {
  /** The signed checkpoint, whose size ends inside a block of records, and that block's complete subtrees. */
  async function tailOf() {
    const signed = await checkpoint();
    expect(signed.size % 256).not.toBe(0);
    const block = Math.floor(signed.size / 256);
    return { signed, block, nodes: nodesOf(block * 256, signed.size), inTail: records.filter((r) => r.leafIndex >= block * 256) };
  }

  it('is kept once its leaves give the signed root, and is then used instead of the records', async () => {
    const { signed, block, nodes, inTail } = await tailOf();
    const cache = mapCache();
    const plain = await treeReader(db)(nodes);
    expect(await treeReader(db, cache, undefined, signed)(nodes)).toEqual(plain);
    expect(cache.kept.get(block)?.end).toBe(signed.size);
    // Used from now on: a record of it edited since leaves the kept hashes (what the checkpoint signed) as they were.
    const victim = inTail[0]!;
    const digest = await db('call_records').where('leaf_index', victim.leafIndex).first('args_digest');
    await db.raw(`update call_records set args_digest = sha256('forged') where leaf_index = ?`, [victim.leafIndex]);
    try {
      expect(await treeReader(db)(nodes)).not.toEqual(plain);
      expect(await treeReader(db, cache, undefined, signed)(nodes)).toEqual(plain);
    } finally {
      await db('call_records').where('leaf_index', victim.leafIndex).update({ args_digest: digest.args_digest });
    }
  });

  it('kept at a smaller size, is rebuilt and kept again for a larger one; kept at a larger, serves a smaller', async () => {
    const { signed, block, nodes } = await tailOf();
    const smaller = { size: signed.size - 1, root: await rootAt(signed.size - 1, treeReader(db)) };
    const cache = mapCache();
    const atSmaller = nodesOf(block * 256, smaller.size);
    expect(await treeReader(db, cache, undefined, smaller)(atSmaller)).toEqual(await treeReader(db)(atSmaller));
    expect(cache.kept.get(block)?.end).toBe(smaller.size);
    expect(await treeReader(db, cache, undefined, signed)(nodes)).toEqual(await treeReader(db)(nodes));
    expect(cache.kept.get(block)?.end).toBe(signed.size);
    expect(await treeReader(db, cache, undefined, smaller)(atSmaller)).toEqual(await treeReader(db)(atSmaller));
    expect(cache.kept.get(block)?.end).toBe(signed.size);
  });

  it('is not kept when its leaves do not give the root the checkpoint signs', async () => {
    const { signed, block, nodes } = await tailOf();
    const cache = mapCache();
    await treeReader(db, cache, undefined, { size: signed.size, root: Buffer.alloc(32) })(nodes);
    expect(cache.kept.has(block)).toBe(false);
  });

  it('is no longer used once a record of it is deleted: the proof names the leaf gone, as without a cache', async () => {
    const { signed, block, nodes, inTail } = await tailOf();
    const cache = mapCache();
    await treeReader(db, cache, undefined, signed)(nodes);
    expect(cache.kept.has(block)).toBe(true);
    const victim = inTail.at(-1)!;
    await without(victim, async () => {
      await expect(treeReader(db, cache, undefined, signed)(nodes)).rejects.toMatchObject({ leafIndex: victim.leafIndex });
      expect(cache.kept.has(block)).toBe(false);
    });
  });

  it('in the service: a proof against the latest checkpoint, refused while a record of its partial block is gone', async () => {
    const { signed, inTail } = await tailOf();
    const [kept, victim] = [records[50]!, inTail[1]!];
    const first = (await proofOf(kept).expect(200)).body;
    expect(first.treeSize).toBe(signed.size);
    const hashes = first.hashes.map((hash: string) => Buffer.from(hash, 'base64'));
    expect(verifyInclusion(kept.leafIndex, signed.size, leafHash(recordLeaf(kept as never)), hashes, signed.root)).toBe(true);
    expect((await proofOf(kept).expect(200)).body).toEqual(first);
    await without(victim, async () => {
      expect((await proofOf(kept).expect(409)).body).toMatchObject({
        code: 'not_provable',
        detail: `leaf ${victim.leafIndex} has no record and no stored hash covers it`,
      });
    });
    expect((await proofOf(kept).expect(200)).body).toEqual(first);
  });
});
