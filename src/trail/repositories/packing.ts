import type { Database } from '../../db/database';
import { dayOfTable, dayTable } from './days';

/**
 * Closed days of the call trail, packed: a day's B-tree is written while the day is open, one
 * grant's new entry landing at the end of that grant's run, so its pages split in the middle and
 * settle part full. Once the day is over nothing more is inserted into it (an outcome
 * updates its record on the same page and leaves the index alone), so the maintenance job rebuilds
 * that index once, sorted and packed full, which takes markedly fewer bytes a record
 * (docs/call-trail.md has the current figures and how to measure them).
 *
 * `REINDEX CONCURRENTLY` takes no lock that stops a check, a report or a listing. A packed index
 * says so itself: its `fillfactor` is 100 (set just before the rebuild, which copies it). A rebuild
 * that failed has its setting reset; one cut off by a crash leaves an invalid copy (`…_ccnew`),
 * which marks the day unpacked and is dropped by the next attempt. Part of the trail's repository
 * (call-records.ts holds the rows' SQL).
 */

const PACKED = 'fillfactor=100';

/** The one query method a rebuild needs of a pooled node-postgres client: a session of its own. */
interface PgSession {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

export interface DayIndex {
  day: string;
  index: string;
  packed: boolean;
  bytes: number;
}

/** The valid B-tree of every day partition (not the partial one of its denials), and whether it was rebuilt packed. */
export async function dayIndexes(db: Database): Promise<DayIndex[]> {
  const { rows } = await db.raw<{
    rows: Array<{ table: string; index: string; options: string[] | null; unfinished: boolean; bytes: string }>;
  }>(
    `select t.relname as table, i.relname as index, i.reloptions as options, pg_relation_size(i.oid) as bytes,
            exists (select 1 from pg_index y join pg_class c on c.oid = y.indexrelid
                     where y.indrelid = t.oid and not y.indisvalid and c.relname like '%\\_ccnew%') as unfinished
       from pg_inherits h
       join pg_class t on t.oid = h.inhrelid
       join pg_index x on x.indrelid = t.oid and x.indisvalid and x.indpred is null
       join pg_class i on i.oid = x.indexrelid
       join pg_am a on a.oid = i.relam and a.amname = 'btree'
      where h.inhparent = 'call_records'::regclass`,
  );
  return rows.flatMap((row) => {
    const day = dayOfTable(row.table);
    if (!day) return [];
    const packed = (row.options ?? []).includes(PACKED) && !row.unfinished;
    return [{ day, index: row.index, packed, bytes: Number(row.bytes) }];
  });
}

/**
 * Rebuilds one day's B-tree packed. Answers the index's bytes before and after, or undefined when
 * another replica is rebuilding that day (a session advisory lock on the day's table name).
 * `stop` cancels the rebuild server-side (a shutdown must not wait minutes for it): it then fails
 * as any failed rebuild does, and the day is packed on a later pass.
 */
export async function packTrailDay(db: Database, day: string, stop?: AbortSignal): Promise<{ before: number; after: number } | undefined> {
  const table = dayTable(day);
  const session = (await db.client.acquireConnection()) as PgSession;
  const { rows: backend } = await session.query('select pg_backend_pid() as pid');
  const cancel = () => void db.raw('select pg_cancel_backend(?)', [Number(backend[0]!.pid)]).catch(() => undefined);
  stop?.addEventListener('abort', cancel);
  try {
    stop?.throwIfAborted();
    const { rows: locked } = await session.query('select pg_try_advisory_lock(hashtext($1)) as locked', [table]);
    if (!locked[0]?.locked) return undefined;
    try {
      return await rebuild(session, table);
    } finally {
      await session.query('select pg_advisory_unlock(hashtext($1))', [table]);
    }
  } finally {
    stop?.removeEventListener('abort', cancel);
    await db.client.releaseConnection(session);
  }
}

async function rebuild(session: PgSession, table: string): Promise<{ before: number; after: number }> {
  // What a failed rebuild of this table left: an invalid copy that every insert would still maintain.
  const { rows: leftovers } = await session.query(
    `select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid
      where x.indrelid = $1::regclass and not x.indisvalid and i.relname like '%\\_ccnew%'`,
    [table],
  );
  for (const { name } of leftovers) await session.query(`drop index concurrently if exists "${String(name)}"`);
  const { rows } = await session.query(
    `select i.relname as name, pg_relation_size(i.oid) as bytes
       from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am a on a.oid = i.relam and a.amname = 'btree'
      where x.indrelid = $1::regclass and x.indisvalid`,
    [table],
  );
  const index = rows[0];
  if (!index) throw new Error(`no B-tree on ${table}`);
  const name = `"${String(index.name)}"`;
  await session.query(`alter index ${name} set (fillfactor = 100)`);
  try {
    await session.query(`reindex index concurrently ${name}`);
  } catch (error) {
    await session.query(`alter index ${name} reset (fillfactor)`);
    throw error;
  }
  const { rows: after } = await session.query('select pg_relation_size($1::regclass) as bytes', [String(index.name)]);
  return { before: Number(index.bytes), after: Number(after[0]!.bytes) };
}
