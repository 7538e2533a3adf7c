import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import { idBytes } from '../../kernel/ids';
import type { ListPosition } from '../../kernel/cursor';
import * as codec from './codec';
import { withApprovals } from './call-record-approvals';
import {
  ALLOWED_OUTCOMES,
  decode,
  ofGrant,
  withShape,
  type CallRecordRow,
  type PgConnection,
  type Queryable,
  type StoredRow,
} from './call-record-rows';

/**
 * The trail's listings (call-records.ts holds the module's story): a grant's records newest first,
 * narrowed by a filter, and one day's records in time order for the export; live days and a held
 * tree's dropped ones alike.
 */

/**
 * What a listing may be narrowed to. `credential`: the calls that received the token of that
 * fingerprint (credential lineage); `outcome`, `reason`, `tool`, `principal` (a user or agent id);
 * `from` (inclusive) and `to` (exclusive) on the check's time.
 */
export interface CallFilter {
  credential?: Buffer;
  outcome?: codec.Outcome;
  reason?: string;
  tool?: string;
  principal?: string;
  from?: Date;
  to?: Date;
}

/** The filter's conditions on a row `r`, and their bindings in order; `key` names the set for the statement's name. */
function filterSql(filter: CallFilter): { sql: string; bindings: Knex.RawBinding[]; key: string } {
  const parts: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  const key: string[] = [];
  if (filter.from) {
    parts.push('r.requested_at >= ?');
    bindings.push(filter.from);
    key.push('f');
  }
  if (filter.to) {
    parts.push('r.requested_at < ?');
    bindings.push(filter.to);
    key.push('t');
  }
  if (filter.outcome) {
    // A literal, not a parameter: with it the generic plan can use the index of denied records.
    parts.push(`r.outcome = ${codec.OUTCOME_CODES[filter.outcome]}`);
    key.push(`o${codec.OUTCOME_CODES[filter.outcome]}`);
  }
  if (filter.reason === 'allowed') {
    parts.push(`r.reason is null and r.outcome in (${ALLOWED_OUTCOMES})`);
    key.push('ra');
  } else if (filter.reason === 'approval_required') {
    parts.push(`r.reason is null and r.outcome = ${codec.OUTCOME_CODES.awaiting_approval}`);
    key.push('rq');
  } else if (filter.reason) {
    parts.push('r.reason = ?');
    bindings.push(filter.reason);
    key.push('r');
  }
  if (filter.tool !== undefined || filter.principal !== undefined) {
    // The (tool, principal) pairs are few and stored once: their codes, then the records by code.
    const where = [filter.tool !== undefined ? 's.tool = ?' : '', filter.principal !== undefined ? 's.principal_id = ?' : ''].filter(
      Boolean,
    );
    parts.push(`r.shape = any(array(select s.code from call_record_shapes s where ${where.join(' and ')}))`);
    if (filter.tool !== undefined) bindings.push(filter.tool);
    if (filter.principal !== undefined) bindings.push(filter.principal);
    key.push(`s${where.length === 2 ? 'tp' : filter.tool !== undefined ? 't' : 'p'}`);
  }
  if (filter.credential) {
    parts.push('r.credential_fingerprint = ?');
    bindings.push(filter.credential);
    key.push('c');
  }
  return { sql: parts.map((part) => `and ${part}`).join(' '), bindings, key: key.join('') };
}

function listing(
  grantId: string,
  after: ListPosition | null,
  size: number,
  filter: CallFilter = {},
): { sql: string; bindings: Knex.RawBinding[]; key: string } | undefined {
  const grant = idBytes('grant', grantId);
  const afterId = after && idBytes('call', after.id);
  if (!grant || (after && !afterId)) return undefined;
  // The time bound is what the (grant_id, requested_at) index ranges on; the row comparison breaks ties.
  const position = after ? 'and r.requested_at <= ? and (r.requested_at, r.id) < (?, ?::uuid)' : '';
  const positionBindings = after ? [after.at, after.at, afterId!.toString('hex')] : [];
  const narrowed = filterSql(filter);
  const page = (table: string) =>
    `(select * from ${table} r where ${ofGrant('r.grant_id', '?::uuid')} ${position} ${narrowed.sql} order by r.requested_at desc, r.id desc limit ?)`;
  const bindings = [grant.toString('hex'), grant.toString('hex'), ...positionBindings, ...narrowed.bindings, size];
  return {
    sql: `${withShape(`(${page('call_records')} union all ${page('held_call_records')}) r`)} order by r.requested_at desc, r.id desc limit ?`,
    bindings: [...bindings, ...bindings, size],
    key: narrowed.key,
  };
}

/**
 * A grant's records newest first, after a position: the live days, and a held tree's dropped ones.
 * A named prepared statement (one per shape of the query): planning a union over every day's
 * partition costs more than running it, and a connection plans each statement once.
 */
export async function callRecordsAfter(
  db: Database,
  grantId: string,
  after: ListPosition | null,
  size: number,
  filter: CallFilter = {},
  now: Date = new Date(),
): Promise<CallRecordRow[]> {
  const query = listing(grantId, after, size, filter);
  if (!query) return [];
  let index = 0;
  const statement = {
    name: `call_records_${after ? 'after' : 'newest'}${query.key ? `_${query.key}` : ''}_v3`,
    text: query.sql.replace(/\?/g, () => `$${(index += 1)}`),
    values: query.bindings,
  };
  const connection = (await db.client.acquireConnection()) as PgConnection;
  let rows: StoredRow[];
  try {
    ({ rows } = (await connection.query(statement)) as { rows: StoredRow[] });
  } finally {
    await db.client.releaseConnection(connection);
  }
  return withApprovals(db, rows.map(decode), now);
}

/** The plan Postgres runs callRecordsAfter with, and its timing (`npm run bench:trail` prints it). */
export async function callRecordsAfterPlan(
  db: Queryable,
  grantId: string,
  after: ListPosition | null,
  size: number,
  filter: CallFilter = {},
): Promise<string> {
  const query = listing(grantId, after, size, filter);
  if (!query) return '';
  const { rows } = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`explain (analyze, buffers) ${query.sql}`, query.bindings);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

/** One UTC day's records in time order after a position (the export): live and held alike. */
export async function callRecordsOfDay(db: Queryable, from: Date, to: Date, after: { at: Date; uuid: string } | null, size: number) {
  const position = after ? 'and (r.requested_at, r.id) > (?, ?::uuid)' : '';
  const page = (table: string) =>
    `(select * from ${table} r where r.requested_at >= ? and r.requested_at < ? ${position} order by r.requested_at, r.id limit ?)`;
  const bindings = [from, to, ...(after ? [after.at, after.uuid] : []), size];
  const { rows } = await db.raw<{ rows: StoredRow[] }>(
    `${withShape(`(${page('call_records')} union all ${page('held_call_records')}) r`)} order by r.requested_at, r.id limit ?`,
    [...bindings, ...bindings, size],
  );
  const last = rows.at(-1);
  return { records: await withApprovals(db, rows.map(decode), new Date()), next: last ? { at: last.requested_at, uuid: last.id } : null };
}
