import type { Database } from '../../db/database';
import { uuidOf } from './codec';

/**
 * Holds on the call trail (`call_record_holds`, by tree root) and the rows of held trees copied
 * aside before their day was dropped (`held_call_records`; days.ts copies them at the drop). Part
 * of the trail's repository.
 */

/** The root of the grant's tree, or undefined for no such grant. */
export async function rootOfGrant(db: Database, grantId: string): Promise<string | undefined> {
  const row = await db('grants').where('id', grantId).first<{ root_id: string } | undefined>('root_id');
  return row?.root_id;
}

export async function holdTree(db: Database, rootId: string, at: Date): Promise<void> {
  await db('call_record_holds').insert({ root_grant_id: rootId, held_at: at }).onConflict('root_grant_id').ignore();
}

/**
 * Ends a hold: the tree's copied rows go too (they are past retention, kept only for the hold).
 * A small delete of what was held, never of the trail itself. Answers how many rows went.
 */
export async function releaseTree(db: Database, rootId: string): Promise<number> {
  return db.transaction(async (trx) => {
    const grants: Array<{ id: string }> = await trx('grants').where('root_id', rootId).select('id');
    await trx('call_record_holds').where('root_grant_id', rootId).delete();
    if (grants.length === 0) return 0;
    const { rowCount } = await trx.raw<{ rowCount: number }>('delete from held_call_records where grant_id = any(?::uuid[])', [
      grants.map((g) => uuidOf('grant', g.id)),
    ]);
    return rowCount;
  });
}

/** Every grant of every held tree, the ones made after the hold included. */
export async function heldGrantIds(db: Database): Promise<string[]> {
  const rows: Array<{ id: string }> = await db('call_record_holds as h').join('grants as g', 'g.root_id', 'h.root_grant_id').select('g.id');
  return rows.map((row) => row.id);
}

export async function heldRowCount(db: Database): Promise<number> {
  const [row] = (await db('held_call_records').count({ n: '*' })) as Array<{ n: string }>;
  return Number(row?.n ?? 0);
}

/** The leaves (records' and outcomes') of a tree's held rows: what a release takes out of the trail. */
export async function heldLeavesOfTree(db: Database, rootId: string): Promise<number[]> {
  const grants: Array<{ id: string }> = await db('grants').where('root_id', rootId).select('id');
  if (grants.length === 0) return [];
  const { rows } = await db.raw<{ rows: Array<{ leaf: string }> }>(
    `select leaf from (select leaf_index as leaf, grant_id from held_call_records union all
                       select outcome_leaf_index, grant_id from held_call_records) x
      where leaf is not null and grant_id = any(?::uuid[]) order by leaf`,
    [grants.map((g) => uuidOf('grant', g.id))],
  );
  return rows.map((row) => Number(row.leaf));
}
