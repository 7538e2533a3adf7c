import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import { ID_PREFIXES, idBytes, idTimeMs } from '../../kernel/ids';
import type { ListPosition } from '../../kernel/cursor';
import * as codec from './codec';
import type { ShapeMemo } from '../shape-memo';
import { shapeCodes } from './shapes';
import { decisionOfOutcome, leafHash, outcomeLeaf, recordLeaf } from '../tree/leaves';

type Queryable = Database | Knex.Transaction;

/**
 * The call trail, `call_records`: one row per broker check, written before its answer leaves,
 * completed once by the call's outcome. Partitioned by day on `requested_at`, stored in binary
 * (codec.ts); `held_call_records` keeps a held tree's rows of days already dropped,
 * and every read of a grant's trail reads both. Owned here, by the trail domain: the broker's
 * check writes through the trail's writer (trail/writer.ts), the maintenance job
 * (trail/maintenance.ts) makes and drops days.
 */

export interface CallRecordRow {
  id: string;
  grant_id: string;
  tool: string;
  principal_kind: codec.PrincipalKind;
  principal_id: string;
  /** As stored, except a held call's once its approval is settled (see withApprovals). */
  outcome: codec.Outcome | SettledHold;
  reason: string;
  /** The approval the call used or waits for; null for a call no approval concerns. */
  approval_id: string | null;
  /** The policy decision behind the answer (its decision event's id); null on records older than the column. */
  decision_id: string | null;
  error_code: string | null;
  args_digest: string;
  requested_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
  /** The first 8 bytes of the SHA-256 of the token minted for the call, and when it expires. */
  credential_fingerprint?: Buffer | null;
  credential_expires_at?: Date | null;
  /** Joined in call trail listings: who approved the call, when an approval allowed it. */
  approval_decided_by?: string | null;
  /** The record's leaf in the trail's Merkle tree, and its outcome's; null on records older than the tree. */
  leaf_index: number | null;
  outcome_leaf_index: number | null;
  /** The grant's root, read with the record (a member of its leaf). */
  root_id?: string;
  /** What the check answered, as its leaf holds it, whatever became of a held call since. */
  answered?: { decision: 'allow' | 'deny' | 'approval_required'; reason: string };
}

/** What a call held for approval reads as once a human approved it. */
type SettledHold = 'approved';

type OptionalColumns =
  'approval_id' | 'decision_id' | 'error_code' | 'completed_at' | 'duration_ms' | 'credential_fingerprint' | 'credential_expires_at';

/** A row of call_records as a check writes it. */
export type NewCallRecord = Omit<
  CallRecordRow,
  OptionalColumns | 'approval_decided_by' | 'outcome' | 'leaf_index' | 'outcome_leaf_index' | 'answered'
> & {
  outcome: codec.Outcome;
  root_id: string;
} & Partial<Pick<CallRecordRow, OptionalColumns>>;

/** A row as Postgres answers it (its shape joined): uuids as text, bytea as Buffers, codes as numbers. */
interface StoredRow {
  id: string;
  grant_id: string;
  tool: string;
  principal_kind: number;
  principal_id: string;
  outcome: number;
  reason: string | null;
  approval_id: string | null;
  decision_id: string | null;
  error_code: string | null;
  args_digest: Buffer;
  requested_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
  credential_fingerprint: Buffer | null;
  credential_expires_at: Date | null;
  leaf_index: string | null;
  outcome_leaf_index: string | null;
}

/**
 * The grant as the trail's B-tree keys it: 48 random bits of its UUID (UUIDv7's last group), a
 * bigint, 8 bytes smaller than the UUID in every entry. A query names the grant by both: the key
 * ranges the index, the UUID confirms (two grants sharing a key only cost a filtered row). The
 * migration's index spells it exactly so.
 */
export const grantKey = (uuid: string) => `(('x' || right((${uuid})::text, 12))::bit(48)::bigint)`;
export const ofGrant = (column: string, uuid: string) => `${grantKey(column)} = ${grantKey(uuid)} and ${column} = ${uuid}`;

/** A record keeps its completion as milliseconds after its check: 4 bytes, where a timestamp takes 8. */
const COMPLETED_AT = `r.requested_at + r.completed_after_ms * interval '1 millisecond'`;
const completedAfterMs = (row: Pick<NewCallRecord, 'requested_at' | 'completed_at'>) =>
  row.completed_at ? row.completed_at.getTime() - row.requested_at.getTime() : null;

/** A query of rows of the trail (`r`) read back with their shape. */
const READ = `r.id, r.grant_id, s.tool, s.principal_kind, s.principal_id, r.outcome, r.reason, r.approval_id, r.decision_id,
  r.error_code, r.args_digest, r.requested_at, ${COMPLETED_AT} as completed_at, r.duration_ms, r.credential_fingerprint,
  r.credential_expires_at, r.leaf_index, r.outcome_leaf_index`;
const withShape = (rows: string) => `select ${READ} from ${rows} join call_record_shapes s on s.code = r.shape`;

function decode(row: StoredRow): CallRecordRow {
  const outcome = codec.outcomeOf(row.outcome);
  const reason = row.reason ?? codec.usualReason(outcome) ?? '';
  return {
    id: codec.idOfUuid('call', row.id),
    grant_id: codec.idOfUuid('grant', row.grant_id),
    tool: row.tool,
    principal_kind: codec.principalKindOf(row.principal_kind),
    principal_id: row.principal_id,
    outcome,
    reason,
    approval_id: row.approval_id && codec.idOfUuid('approval', row.approval_id),
    decision_id: row.decision_id,
    error_code: row.error_code,
    args_digest: codec.digestOfBytes(row.args_digest),
    requested_at: row.requested_at,
    completed_at: row.completed_at,
    duration_ms: row.duration_ms,
    credential_fingerprint: row.credential_fingerprint,
    credential_expires_at: row.credential_expires_at,
    leaf_index: row.leaf_index === null ? null : Number(row.leaf_index),
    outcome_leaf_index: row.outcome_leaf_index === null ? null : Number(row.outcome_leaf_index),
    answered: { decision: decisionOfOutcome(outcome), reason },
  };
}

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

/**
 * Completes a pending record at `completedAt`, once: undefined when it was no longer pending (a
 * second report). The outcome decision has refused a completion the column cannot hold.
 */
export async function completeCallRecord(
  db: Database,
  callId: string,
  report: { outcome: 'succeeded' | 'failed'; durationMs?: number; errorCode?: string },
  completedAt: Date,
  tree = true,
): Promise<CallRecordRow | undefined> {
  const where = byCallId(callId);
  if (!where) return undefined;
  const completed = await db.transaction(async (trx) => {
    const row = await completeInUnit(trx, where, report, completedAt);
    if (!row || !tree) return row;
    // The row is ours until the commit: its outcome's leaf joins the tree with it, exactly once.
    const leaf = leafHash(outcomeLeaf({ callId, outcome: report.outcome, completedAt: completedAt.toISOString() }));
    const { rows } = await trx.raw<{ rows: Array<{ outcome_leaf_index: string }> }>(
      `update call_records r set outcome_leaf_index = trail_append(array[?::bytea]) where ${where.sql} returning outcome_leaf_index`,
      [leaf, ...where.bindings],
    );
    return { ...row, outcome_leaf_index: Number(rows[0]!.outcome_leaf_index) };
  });
  return completed && (await withApprovals(db, [completed], completedAt))[0];
}

async function completeInUnit(
  trx: Knex.Transaction,
  where: { sql: string; bindings: Knex.RawBinding[] },
  report: { outcome: 'succeeded' | 'failed'; durationMs?: number; errorCode?: string },
  completedAt: Date,
): Promise<CallRecordRow | undefined> {
  const { rows } = await trx.raw<{ rows: StoredRow[] }>(
    `update call_records r
        set outcome = ?, completed_after_ms = round(extract(epoch from (?::timestamptz - r.requested_at)) * 1000)::integer,
            duration_ms = ?, error_code = ?
       from call_record_shapes s
      where s.code = r.shape and ${where.sql} and r.outcome = ? returning ${READ}`,
    [
      codec.OUTCOME_CODES[report.outcome],
      completedAt,
      report.durationMs ?? null,
      report.errorCode ?? null,
      ...where.bindings,
      codec.OUTCOME_CODES.pending,
    ],
  );
  return rows[0] && decode(rows[0]);
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

/** The records with their grants' roots (a member of each record's leaf). */
async function withRoots(db: Queryable, rows: CallRecordRow[]): Promise<CallRecordRow[]> {
  const grantIds = [...new Set(rows.map((row) => row.grant_id))];
  if (grantIds.length === 0) return rows;
  const grants: Array<{ id: string; root_id: string }> = await db('grants').whereIn('id', grantIds).select('id', 'root_id');
  const roots = new Map(grants.map((grant) => [grant.id, grant.root_id]));
  return rows.map((row) => ({ ...row, root_id: roots.get(row.grant_id) ?? row.grant_id }));
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

/** A span of check times: where the records holding some leaves are, so that Postgres reads only those days. */
export interface CheckTimes {
  from: Date | null;
  to: Date | null;
}

/**
 * The records (live and held) holding a leaf, or an outcome's leaf, in these ranges of leaf indices
 * `[lo, hi)`, with their grants' roots: what the tree's lower levels are rebuilt from. The BRIN
 * indexes on the leaf columns find them (rows are written in leaf order). `within` narrows the
 * live records to checks made in that span: Postgres then plans and reads only those days'
 * partitions (it is a hint: a record outside it is simply not found).
 */
export async function callRecordsOfLeaves(
  db: Queryable,
  ranges: ReadonlyArray<readonly [number, number]>,
  within?: CheckTimes,
): Promise<CallRecordRow[]> {
  if (ranges.length === 0) return [];
  const query = ofLeavesQuery(ranges, within);
  const { rows } = await db.raw<{ rows: Array<StoredRow & { grant_typeid: string | null; root_id: string | null }> }>(
    query.sql,
    query.bindings,
  );
  const decoded = rows.map((row) => ({ ...decode(row), root_id: row.root_id ?? undefined, typeid: row.grant_typeid }));
  // The roots came with the rows, their grants named in SQL; should that naming ever differ from ours, they are read by id.
  if (decoded.every((row) => row.typeid === row.grant_id))
    return decoded.map(({ typeid: _, ...row }) => ({ ...row, root_id: row.root_id ?? row.grant_id }));
  return withRoots(
    db,
    decoded.map(({ typeid: _, root_id: __, ...row }) => row),
  );
}

/** A grant's id (its prefix and the base32 of its UUID, as ids.ts mints it) from the UUID column `uuid`. */
const grantIdOf = (uuid: string) =>
  `(select '${ID_PREFIXES.grant}_' || string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', substring(b.bits from i * 5 + 1 for 5)::int + 1, 1), '' order by i)
      from (select B'00' || ('x' || replace(${uuid}::text, '-', ''))::bit(128) as bits) b, generate_series(0, 25) i)`;

/** Only the columns a leaf is rebuilt from (decode's others read as null). */
const LEAF_READ = `r.id, r.grant_id, s.tool, s.principal_kind, s.principal_id, r.outcome, r.reason, r.approval_id, null as decision_id,
  null as error_code, r.args_digest, r.requested_at, ${COMPLETED_AT} as completed_at, null as duration_ms, null as credential_fingerprint,
  null as credential_expires_at, r.leaf_index, r.outcome_leaf_index`;
const LEAF_COLUMNS =
  'id, grant_id, shape, outcome, reason, approval_id, args_digest, requested_at, completed_after_ms, leaf_index, outcome_leaf_index';

function ofLeavesQuery(ranges: ReadonlyArray<readonly [number, number]>, within?: CheckTimes) {
  const where = ranges
    .map(() => '(r.leaf_index >= ? and r.leaf_index < ?) or (r.outcome_leaf_index >= ? and r.outcome_leaf_index < ?)')
    .join(' or ');
  const bindings = ranges.flatMap(([lo, hi]) => [lo, hi, lo, hi]);
  // An unnamed statement is planned with its values: the partitions outside the span are never opened.
  const span = [within?.from && 'r.requested_at >= ?', within?.to && 'r.requested_at < ?'].filter(Boolean);
  const spanBindings = [within?.from, within?.to].filter((at): at is Date => !!at);
  const live = `select ${LEAF_COLUMNS} from call_records r where (${where})${span.map((part) => ` and ${part}`).join('')}`;
  const held = `select ${LEAF_COLUMNS} from held_call_records r where ${where}`;
  // Each grant's root (a member of the leaf) in the same statement: its id named once per grant
  // (materialized, so once, not per row), its row found by key.
  const names = `select grant_id, ${grantIdOf('grant_id')} as typeid from (select distinct grant_id from rows) d`;
  return {
    sql: `with rows as (${live} union all ${held}), names as materialized (${names})
          select ${LEAF_READ}, n.typeid as grant_typeid, g.root_id from rows r join call_record_shapes s on s.code = r.shape
            join names n on n.grant_id = r.grant_id left join grants g on g.id = n.typeid`,
    bindings: [...bindings, ...spanBindings, ...bindings],
  };
}

/** The plan Postgres runs callRecordsOfLeaves with, and its timing (`npm run bench:trail` prints it). */
export async function callRecordsOfLeavesPlan(
  db: Queryable,
  ranges: ReadonlyArray<readonly [number, number]>,
  within?: CheckTimes,
): Promise<string> {
  const query = ofLeavesQuery(ranges, within);
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

/** The outcomes of an allowed call: what counts against a budget. */
export const ALLOWED_OUTCOMES = [codec.OUTCOME_CODES.pending, codec.OUTCOME_CODES.succeeded, codec.OUTCOME_CODES.failed].join(', ');

// Every allowed call of the tree counts at its own grant and every ancestor (closure), within
// that level's window: the newest `calls` of them for an exact window (older ones can no longer
// decide anything), per bucket for a bucketed one.
const WINDOW_CALLS_SQL = `
with recursive tree as (
  select * from json_to_recordset(?::json) as t(id text, uid uuid, parent_id text, calls int, window_ms bigint, bucket_ms bigint)
), closure as (
  select uid as grant_uid, id as level_id from tree
  union all
  select c.grant_uid, t.parent_id from closure c join tree t on t.id = c.level_id where t.parent_id is not null
), counted as (
  select cl.level_id, l.calls, l.bucket_ms,
         (extract(epoch from r.requested_at) * 1000)::bigint + ?::bigint as at_ms
    from closure cl
    join tree l on l.id = cl.level_id
    -- One index range scan (grant key, requested_at) per level and live day; OFFSET 0 keeps the
    -- planner from flattening it into a merge join that walks the index of every grant's calls.
    cross join lateral (
      select r.requested_at from call_records r
       where ${ofGrant('r.grant_id', 'cl.grant_uid')}
         and r.requested_at > now() - (l.window_ms + l.bucket_ms + ?::bigint) * interval '1 millisecond'
         and r.outcome in (${ALLOWED_OUTCOMES})
      offset 0
    ) r
), newest as (
  select level_id, at_ms, calls, row_number() over (partition by level_id order by at_ms desc) as rank
    from counted where bucket_ms = 0
)
select level_id, at_ms, 1 as n from newest where rank <= calls
union all
select level_id, at_ms - at_ms % bucket_ms, count(*) from counted where bucket_ms > 0 group by 1, 2`;

/**
 * The allowed calls that count in each level's window now, each at its `requested_at` plus
 * `marginMs`: one by one (the newest `calls`) for an exact window, counted per bucket otherwise.
 */
export async function callsInWindows(
  db: Queryable,
  levels: ReadonlyArray<{ id: string; parentId: string | null; calls: number; windowMs: number; bucketMs: number }>,
  marginMs: number,
): Promise<Array<{ levelId: string; atMs: number; n: number }>> {
  const tree = levels.map((l) => ({
    id: l.id,
    uid: codec.uuidOf('grant', l.id),
    parent_id: l.parentId,
    calls: l.calls,
    window_ms: l.windowMs,
    bucket_ms: l.bucketMs,
  }));
  const result = await db.raw<{ rows: Array<{ level_id: string; at_ms: string; n: string }> }>(WINDOW_CALLS_SQL, [
    JSON.stringify(tree),
    marginMs,
    marginMs,
  ]);
  return result.rows.map((row) => ({ levelId: row.level_id, atMs: Number(row.at_ms), n: Number(row.n) }));
}
