import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import * as codec from './codec';
import type { ShapeMemo } from '../shape-memo';
import { shapeCodes } from './shapes';
import { decisionOfOutcome, leafHash, recordLeaf } from '../tree/leaves';
import { completedAfterMs, type NewCallRecord, type PgConnection } from './call-record-rows';

/**
 * A check's writes of the call trail (call-records.ts holds the module's story): each record in
 * `call_records` with its leaf appended to the trail's tree in the same statement, for a batch of
 * concurrent checks or for one record in a unit of work of its own.
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
