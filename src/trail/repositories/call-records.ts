import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import { idBytes, idTimeMs } from '../../kernel/ids';
import type { ListPosition } from '../../kernel/cursor';
import * as codec from './codec';
import type { ShapeMemo } from '../shape-memo';
import { shapeCodes } from './shapes';
import { decisionOfOutcome, leafHash, recordLeaf } from '../tree/leaves';
import {
  ALLOWED_OUTCOMES,
  completedAfterMs,
  decode,
  ofGrant,
  withRoots,
  withShape,
  type CallRecordRow,
  type NewCallRecord,
  type Queryable,
  type StoredRow,
} from './call-record-rows';

export type { CallRecordRow, NewCallRecord } from './call-record-rows';

/**
 * The call trail, `call_records`: one row per broker check, written before its answer leaves,
 * completed once by the call's outcome. Partitioned by day on `requested_at`, stored in binary
 * (codec.ts); `held_call_records` keeps a held tree's rows of days already dropped,
 * and every read of a grant's trail reads both. Owned here, by the trail domain: the broker's
 * check writes through the trail's writer (trail/writer.ts), the maintenance job
 * (trail/maintenance.ts) makes and drops days.
 */

/** The record's leaf hash in the trail's tree (contract §22): its fields as the check answered them. */
export function recordLeafHash(row: NewCallRecord): Buffer {
  return leafHash(
    recordLeaf({
      callId: row.id,
      grantId: row.grant_id,
      rootId: row.root_id,
      tool: row.tool,
      argsDigest: row.args_digest,
      decision: decisionOfOutcome(row.outcome),
      reason: row.reason,
      approvalId: row.approval_id ?? null,
      requestedAt: row.requested_at.toISOString(),
      principal: { kind: row.principal_kind, id: row.principal_id },
    }),
  );
}

/** The record's columns, in the order of INSERT_ROWS's arrays. */
function encode(row: NewCallRecord, shape: number): unknown[] {
  return [
    codec.uuidOf('call', row.id),
    codec.uuidOf('grant', row.grant_id),
    shape,
    codec.OUTCOME_CODES[row.outcome],
    row.reason === codec.usualReason(row.outcome) ? null : row.reason,
    row.approval_id ? codec.uuidOf('approval', row.approval_id) : null,
    row.error_code ?? null,
    codec.digestBytes(row.args_digest),
    row.requested_at,
    completedAfterMs(row),
    row.duration_ms ?? null,
    row.credential_fingerprint ?? null,
    row.credential_expires_at ?? null,
    row.decision_id ? codec.decisionUuidOf(row.decision_id) : null,
  ];
}

const INSERTED = `insert into call_records (id, grant_id, shape, outcome, reason, approval_id, error_code, args_digest, requested_at,
                                            completed_after_ms, duration_ms, credential_fingerprint, credential_expires_at, decision_id,
                                            leaf_index)`;
const COLUMNS = 'c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14';
/** The records' leaves join the tree in the statement that writes them: both commit, or neither (trail_append). */
const APPENDED = (leaves: string) => `with tree as (select trail_append(${leaves}) as first)`;
/** TRAIL_TREE=off (the benchmark's baseline): the same statement, with no leaf. */
const UNTREED = 'with tree as (select null::bigint as first)';

/**
 * One statement for any number of rows: a column of values per array, zipped by unnest. Its text
 * never changes, so it is a named prepared statement: each connection parses and plans it once,
 * and a batch sends only Bind and Execute (the trail is one write per check).
 */
const insertRows = (tree: boolean) => ({
  name: tree ? 'call_records_insert_v6' : 'call_records_insert_untreed_v6',
  text: `${tree ? APPENDED('$15::bytea[]') : UNTREED} ${INSERTED}
select ${COLUMNS}, tree.first + ord - 1 from tree,
       unnest($1::uuid[], $2::uuid[], $3::integer[], $4::smallint[], $5::text[], $6::uuid[], $7::text[], $8::bytea[],
              $9::timestamptz[], $10::integer[], $11::integer[], $12::bytea[], $13::timestamptz[], $14::uuid[])
         with ordinality as u(${COLUMNS}, ord)
returning leaf_index`,
});
const INSERT_ROWS = { on: insertRows(true), off: insertRows(false) };

/** The one query method a batch needs of a pooled node-postgres client. */
interface PgConnection {
  query(statement: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Any number of records in one statement (the group commit of concurrent checks), each with its
 * leaf, in the order given: their leaf indices. `shapes` keeps the shape codes seen committed
 * (src/speedups/memo.ts); without it each write makes or finds its shapes first.
 */
export async function insertCallRecords(
  db: Database,
  rows: readonly NewCallRecord[],
  shapes?: ShapeMemo,
  tree = true,
): Promise<Array<number | undefined>> {
  const codes = await shapeCodes(db, rows, shapes);
  const encoded = rows.map((row, i) => encode(row, codes[i]!));
  // One array per column; node-postgres sends each as a Postgres array (nulls and Buffers included).
  const values = encoded[0]!.map((_, column) => encoded.map((row) => row[column]));
  if (tree) values.push(rows.map(recordLeafHash));
  // Straight to a connection of knex's pool: knex cannot send a named statement.
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    const statement = INSERT_ROWS[tree ? 'on' : 'off'];
    const { rows: appended } = (await connection.query({ ...statement, values })) as { rows: Array<{ leaf_index: string | null }> };
    if (!tree) return rows.map(() => undefined);
    const first = Math.min(...appended.map((row) => Number(row.leaf_index)));
    return rows.map((_, i) => first + i);
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/** One record in a unit of work of its own: it commits with what else the unit changes, or not at all. Its leaf index. */
export async function insertCallRecord(trx: Knex.Transaction, row: NewCallRecord, tree = true): Promise<number | undefined> {
  const [shape] = await shapeCodes(trx, [row]);
  const { rows } = await trx.raw<{ rows: Array<{ leaf_index: string | null }> }>(
    `${tree ? APPENDED('array[?::bytea]') : UNTREED} ${INSERTED} select ?::uuid, ?::uuid, ?::integer, ?::smallint, ?::text, ?::uuid, ?::text, ?::bytea, ?::timestamptz,
            ?::integer, ?::integer, ?::bytea, ?::timestamptz, ?::uuid, tree.first from tree
     returning leaf_index`,
    [...(tree ? [recordLeafHash(row)] : []), ...encode(row, shape!)] as Knex.RawBinding[],
  );
  return tree ? Number(rows[0]!.leaf_index) : undefined;
}

/**
 * Where a call's record is: its id's UUIDv7 time is the record's `requested_at` (the check mints
 * both from one reading of the clock), so the lookup reads one day's partition, and in it the
 * BRIN range of that instant. A second either side covers records written before ids carried it.
 */
function byCallId(callId: string): { sql: string; bindings: Knex.RawBinding[] } | undefined {
  const bytes = idBytes('call', callId);
  if (!bytes) return undefined;
  const at = idTimeMs(bytes);
  return {
    sql: 'r.id = ?::uuid and r.requested_at between ? and ?',
    bindings: [bytes.toString('hex'), new Date(at - 1000), new Date(at + 1000)],
  };
}

export async function findCallRecord(db: Queryable, callId: string): Promise<CallRecordRow | undefined> {
  const where = byCallId(callId);
  if (!where) return undefined;
  const { rows } = await db.raw<{ rows: StoredRow[] }>(`${withShape('call_records r')} where ${where.sql}`, where.bindings);
  return rows[0] && decode(rows[0]);
}

/** A held record of a day already dropped (held_call_records), by its call's id. */
export async function findHeldCallRecord(db: Queryable, callId: string): Promise<CallRecordRow | undefined> {
  const bytes = idBytes('call', callId);
  if (!bytes) return undefined;
  const { rows } = await db.raw<{ rows: StoredRow[] }>(`${withShape('held_call_records r')} where r.id = ?::uuid`, [bytes.toString('hex')]);
  return rows[0] && decode(rows[0]);
}

/** The call's outcome so far, its time and the broker of its grant, for the outcome decision. */
export async function findCallForOutcome(
  db: Queryable,
  callId: string,
): Promise<{ outcome: string; requested_at: Date; broker_id: string } | undefined> {
  const record = await findCallRecord(db, callId);
  if (!record) return undefined;
  const grant = await db('grants').where('id', record.grant_id).first<{ broker_id: string } | undefined>('broker_id');
  return grant && { outcome: record.outcome, requested_at: record.requested_at, broker_id: grant.broker_id };
}

/** A record as people read it (see withApprovals) at `now`; undefined when there is none. */
export async function findCallRecordAsRead(db: Queryable, callId: string, now: Date): Promise<CallRecordRow | undefined> {
  const record = await findCallRecord(db, callId);
  return record && (await withApprovals(db, [record], now))[0];
}

/**
 * The records as people read them, with what became of the approvals they name: who decided each
 * (`approval_decided_by`, for a call an approval allowed and for the call it held), and, for a
 * call held for approval (stored `awaiting_approval`, which a record never stops being), how that
 * ended: `approved` (the call itself runs on the re-sent check, a record of its own), `denied`
 * with `approval_denied`, or `denied` with `approval_expired` when nobody decided in time (a
 * revoked grant's approvals expire with it). Only a pending, unexpired approval reads as awaiting.
 */
async function withApprovals(db: Queryable, read: CallRecordRow[], now: Date): Promise<CallRecordRow[]> {
  const rows = await withRoots(db, read);
  const approvalIds = [...new Set(rows.flatMap((row) => (row.approval_id ? [row.approval_id] : [])))];
  if (approvalIds.length === 0) return rows.map((row) => ({ ...row, approval_decided_by: null }));
  const approvals: Array<{ id: string; decided_by: string | null; state: string; expires_at: Date }> = await db('approvals')
    .whereIn('id', approvalIds)
    .select('id', 'decided_by', 'state', 'expires_at');
  const byId = new Map(approvals.map((a) => [a.id, a]));
  return rows.map((row) => {
    const approval = row.approval_id ? byId.get(row.approval_id) : undefined;
    const read = { ...row, approval_decided_by: approval?.decided_by ?? null };
    if (row.outcome !== 'awaiting_approval' || !approval) return read;
    if (approval.state === 'approved' || approval.state === 'used') return { ...read, outcome: 'approved' as const };
    if (approval.state === 'denied') return { ...read, outcome: 'denied' as const, reason: 'approval_denied' };
    if (approval.expires_at.getTime() <= now.getTime()) return { ...read, outcome: 'denied' as const, reason: 'approval_expired' };
    return read;
  });
}

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
