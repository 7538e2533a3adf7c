import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import { nodeKey, type Node } from '../tree/proofs';

type Queryable = Database | Knex.Transaction;

/**
 * The trail's Merkle tree as stored (migrations/20261126155000_trail_tree.ts): the head (size and
 * frontier), the hashes of its complete subtrees by (level, index), and the signed checkpoints.
 * Appending is trail_append's, in the statement that writes the records (call-record-inserts.ts).
 */

export async function treeHead(db: Queryable): Promise<{ size: number; frontier: Buffer[] }> {
  const row = await db('trail_tree').where('id', 1).first<{ size: string; frontier: Buffer[] }>('size', 'frontier');
  if (!row) throw new Error('the trail has no tree: run the migrations');
  return { size: Number(row.size), frontier: row.frontier };
}

/** The stored hashes of these nodes, by nodeKey, in one read. */
export async function readNodes(db: Queryable, nodes: readonly Node[]): Promise<Map<string, Buffer>> {
  if (nodes.length === 0) return new Map();
  const query = nodesQuery(nodes);
  const { rows } = await db.raw<{ rows: HashRow[] }>(query.sql, query.bindings);
  return byKey(rows);
}

type HashRow = { level: number; idx: string; hash: Buffer };
const byKey = (rows: readonly HashRow[]) => new Map(rows.map((row) => [nodeKey({ level: row.level, index: Number(row.idx) }), row.hash]));

/**
 * A lateral lookup per node: index probes by key, never a scan of the table, whatever its size.
 * A hash moved into its pack (packHashes) is read from there, in the same statement.
 */
function nodesQuery(nodes: readonly Node[]) {
  return {
    sql: `select n.level, n.idx, coalesce(h.hash, p.hash) as hash from unnest(?::smallint[], ?::bigint[]) as n(level, idx)
       left join lateral (select hash from trail_hashes h where h.level = n.level and h.idx = n.idx) h on true
       left join lateral (select substring(p.hashes from (n.idx - p.first_idx)::int * 32 + 1 for 32) as hash from trail_hash_packs p
                           where h.hash is null and p.level = n.level and p.first_idx = n.idx - n.idx % ${PACK}) p on true
      where coalesce(h.hash, p.hash) is not null`,
    bindings: [nodes.map((node) => node.level), nodes.map((node) => node.index)],
  };
}

export interface StoredCheckpoint {
  size: number;
  note: string;
}

/** The newest signed checkpoint, or undefined before the first. */
export async function latestCheckpoint(db: Queryable): Promise<StoredCheckpoint | undefined> {
  const row = await db('trail_checkpoints').orderBy('size', 'desc').first<{ size: string; note: string } | undefined>('size', 'note');
  return row && { size: Number(row.size), note: row.note };
}

/** The smallest signed checkpoint of at least `size` leaves. */
export async function firstCheckpointFrom(db: Queryable, size: number): Promise<StoredCheckpoint | undefined> {
  const row = await db('trail_checkpoints')
    .where('size', '>=', Math.max(size, 1))
    .orderBy('size', 'asc')
    .first<{ size: string; note: string } | undefined>('size', 'note');
  return row && { size: Number(row.size), note: row.note };
}

export async function checkpointOfSize(db: Queryable, size: number): Promise<StoredCheckpoint | undefined> {
  const row = await db('trail_checkpoints').where('size', size).first<{ size: string; note: string } | undefined>('size', 'note');
  return row && { size: Number(row.size), note: row.note };
}

/**
 * Checkpoint retention: of those signed before `before`, only the last of each UTC day stays (an
 * auditor's daily anchor, and what covers the day when it is exported); the newest are all kept.
 * Answers how many went.
 */
export async function pruneCheckpoints(db: Queryable, before: Date): Promise<number> {
  const { rowCount } = await db.raw<{ rowCount: number }>(
    `delete from trail_checkpoints where size in (
       select size from (select size, row_number() over (partition by (signed_at at time zone 'UTC')::date order by size desc) as rank
                           from trail_checkpoints where signed_at < ?) x
        where rank > 1)`,
    [before],
  );
  return rowCount;
}

/** Keeps a signed checkpoint; another replica's of the same size stands (both sign the same tree). */
export async function saveCheckpoint(db: Queryable, checkpoint: StoredCheckpoint): Promise<void> {
  await db('trail_checkpoints').insert({ size: checkpoint.size, note: checkpoint.note }).onConflict('size').ignore();
}

/**
 * When the leaves `[lo, hi)` were appended, as signed checkpoints bound it: after the last one
 * signed before the tree reached `lo` leaves, before the first one covering them. Null where no
 * checkpoint bounds it (an older checkpoint pruned away leaves a day's last one, still a bound).
 */
export async function appendedBetween(db: Queryable, lo: number, hi: number): Promise<{ after: Date | null; before: Date | null }> {
  const { rows } = await db.raw<{ rows: Array<{ after: Date | null; before: Date | null }> }>(
    `select (select signed_at from trail_checkpoints where size <= ? order by size desc limit 1) as after,
            (select signed_at from trail_checkpoints where size >= ? order by size asc limit 1) as before`,
    [lo, hi],
  );
  return rows[0] ?? { after: null, before: null };
}

/** Levels below this are not stored while their leaves' records are kept (migrations/20261126203000). */
export const STORED_FROM_LEVEL = 8;
export const BLOCK = 1 << STORED_FROM_LEVEL;

/**
 * In one read: the hashes stored below level 8 in these 256-leaf blocks (kept for leaves whose
 * records are gone) and (`roots`) the level-8 hash of each, by nodeKey.
 */
export async function readBlockHashes(
  db: Queryable,
  blocks: readonly number[],
  roots: boolean,
): Promise<{ lower: Map<string, Buffer>; roots: Map<string, Buffer> }> {
  if (blocks.length === 0) return { lower: new Map(), roots: new Map() };
  const levels = Array.from({ length: STORED_FROM_LEVEL }, (_, level) => level);
  const ranges = blocks.flatMap((block) => levels.map((level) => [level, block * 2 ** (STORED_FROM_LEVEL - level)] as const));
  // The limit (a range holds at most a block's leaves) keeps the lateral lookup a probe of the key
  // per range: flattened into a join, Postgres may hash-join the ranges against a scan of every
  // stored hash once there are a dozen of them, which grows with the tree.
  const lower = `select h.level, h.idx, h.hash from unnest(?::smallint[], ?::bigint[]) as n(level, lo)
       cross join lateral (select level, idx, hash from trail_hashes h
                            where h.level = n.level and h.idx >= n.lo and h.idx < n.lo + (1::bigint << (${STORED_FROM_LEVEL} - n.level))
                            limit ${BLOCK}) h`;
  const upper = roots ? nodesQuery(blocks.map((block) => ({ level: STORED_FROM_LEVEL, index: block }))) : undefined;
  const { rows } = await db.raw<{ rows: HashRow[] }>(upper ? `${lower} union all ${upper.sql}` : lower, [
    ranges.map(([level]) => level),
    ranges.map(([, lo]) => lo),
    ...(upper?.bindings ?? []),
  ]);
  return {
    lower: byKey(rows.filter((row) => row.level < STORED_FROM_LEVEL)),
    roots: byKey(rows.filter((row) => row.level >= STORED_FROM_LEVEL)),
  };
}

/** How many consecutive hashes of one level a row of trail_hash_packs holds. */
export const PACK = 256;

/**
 * Moves every complete group of PACK stored hashes of level 8 and up whose leaves all lie before
 * `before` (the live days' first leaf) into one trail_hash_packs row each, in one transaction:
 * proofs read the same hashes, for ~32 bytes a hash instead of ~150. Idempotent and safe with
 * replicas: a pack another one wrote stands, and only rows a pack covers are deleted. Answers how
 * many hashes were moved.
 */
export async function packHashes(db: Database, before: number): Promise<number> {
  let moved = 0;
  for (let level = STORED_FROM_LEVEL; PACK * 2 ** level <= before; level++) {
    const end = Math.floor(before / 2 ** level / PACK) * PACK;
    moved += await db.transaction(async (trx) => {
      await trx.raw(
        `insert into trail_hash_packs (level, first_idx, hashes)
         select ?::smallint, g.first, string_agg(h.hash, ''::bytea order by h.idx)
           from (select idx - idx % ${PACK} as first from trail_hashes where level = ? and idx < ?
                  group by 1 having count(*) = ${PACK}) g
           join trail_hashes h on h.level = ? and h.idx >= g.first and h.idx < g.first + ${PACK}
          group by g.first
         on conflict do nothing`,
        [level, level, end, level],
      );
      const { rowCount } = await trx.raw<{ rowCount: number }>(
        `delete from trail_hashes h using trail_hash_packs p
          where h.level = ? and h.idx < ? and p.level = h.level and p.first_idx = h.idx - h.idx % ${PACK}`,
        [level, end],
      );
      return rowCount;
    });
  }
  return moved;
}

/** The tree's size at the last checkpoint signed before `day`: its leaves were all appended before that day. */
export async function sizeSignedBefore(db: Queryable, day: Date): Promise<number> {
  const row = await db('trail_checkpoints')
    .where('signed_at', '<', day)
    .orderBy('size', 'desc')
    .first<{ size: string } | undefined>('size');
  return row ? Number(row.size) : 0;
}

/** Keeps the hashes of these complete subtrees (the same node always hashes the same). */
export async function saveNodes(db: Queryable, nodes: ReadonlyArray<{ level: number; index: number; hash: Buffer }>): Promise<void> {
  if (nodes.length === 0) return;
  await db.raw(
    `insert into trail_hashes (level, idx, hash) select * from unnest(?::smallint[], ?::bigint[], ?::bytea[]) on conflict do nothing`,
    [nodes.map((node) => node.level), nodes.map((node) => node.index), nodes.map((node) => node.hash)],
  );
}
