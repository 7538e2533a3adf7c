import type { Database } from '../../db/database';
import { idBytes, idTimeMs } from '../../kernel/ids';
import * as codec from './codec';
import { leafHash, outcomeLeaf } from '../tree/leaves';

/**
 * The outcomes of a broker's batch (POST /api/broker/outcomes) in a fixed number of statements,
 * whatever its size: its calls read in one, their grants' brokers in one, the allowed completions
 * (each with its outcome's leaf) written in one. The single report completes its record with the
 * same statement.
 */

/** A call as the outcome decision reads it: its outcome so far, its time, its grant. */
export interface CallForOutcome {
  outcome: codec.Outcome;
  requested_at: Date;
  grant_id: string;
}

/** What a batch completes a record with. */
export interface Completion {
  callId: string;
  outcome: 'succeeded' | 'failed';
  durationMs?: number;
  errorCode?: string;
}

/** The one query method a statement needs of a pooled node-postgres client. */
interface PgConnection {
  query(statement: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/** A named prepared statement on a connection of knex's pool (knex cannot send one): parsed and planned once per connection. */
async function run<Row>(db: Database, statement: { name: string; text: string }, values: unknown[]): Promise<Row[]> {
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    return (await connection.query({ ...statement, values })).rows as Row[];
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Where each call's record is (call-records.ts's byCallId, for many): its id's UUIDv7 time, a
 * second either side. Ids that are no call's are left out, with their position in `callIds`.
 */
function located(callIds: readonly string[]): { at: number[]; ids: string[]; from: Date[]; to: Date[] } {
  const spots = { at: [] as number[], ids: [] as string[], from: [] as Date[], to: [] as Date[] };
  callIds.forEach((callId, at) => {
    const bytes = idBytes('call', callId);
    if (!bytes) return;
    const time = idTimeMs(bytes);
    spots.at.push(at);
    spots.ids.push(bytes.toString('hex'));
    spots.from.push(new Date(time - 1000));
    spots.to.push(new Date(time + 1000));
  });
  return spots;
}

/**
 * The batch's calls, each looked up on its own (a lateral subquery kept apart by `offset 0`: a
 * nested loop whose every probe reads the one day's partition and BRIN range of its call, as a
 * single lookup does, never a join over the whole trail).
 */
const INPUT = `unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[]) with ordinality as i(id, lo, hi, ord)`;
const probe = (columns: string, lock = '') =>
  `cross join lateral (select ${columns} from call_records r where r.id = i.id and r.requested_at between i.lo and i.hi ${lock} offset 0) r`;

const FIND = {
  name: 'call_outcomes_find_v1',
  text: `select i.ord, r.outcome, r.requested_at, r.grant_id from ${INPUT} ${probe('r.outcome, r.requested_at, r.grant_id')}`,
};

/** The calls of `callIds` as the outcome decision reads them, by position in `callIds`; a call with no record has none. */
export async function findCallsForOutcome(db: Database, callIds: readonly string[]): Promise<Map<number, CallForOutcome>> {
  const spots = located(callIds);
  const found = new Map<number, CallForOutcome>();
  if (spots.ids.length === 0) return found;
  const rows = await run<{ ord: string; outcome: number; requested_at: Date; grant_id: string }>(db, FIND, [
    spots.ids,
    spots.from,
    spots.to,
  ]);
  for (const row of rows) {
    found.set(spots.at[Number(row.ord) - 1]!, {
      outcome: codec.outcomeOf(row.outcome),
      requested_at: row.requested_at,
      grant_id: codec.idOfUuid('grant', row.grant_id),
    });
  }
  return found;
}

/** The broker of each grant named, in one read. */
export async function brokersOfGrants(db: Database, grantIds: readonly string[]): Promise<Map<string, string>> {
  const unique = [...new Set(grantIds)];
  if (unique.length === 0) return new Map();
  const rows: Array<{ id: string; broker_id: string }> = await db('grants').whereIn('id', unique).select('id', 'broker_id');
  return new Map(rows.map((row) => [row.id, row.broker_id]));
}

/**
 * The completions in one statement: each record still pending is locked (in id order, so two
 * batches naming the same calls wait for each other instead of deadlocking), then its outcome's
 * leaf appended and the record completed in the same statement (both commit, or neither). A record
 * no longer pending once its lock is had (another report of it won) is left alone and has no leaf:
 * a batch sent again appends nothing twice. The tree's head is locked only after the records, for
 * the append, the completions and the commit. The completing UPDATE writes only a record still
 * pending, and the statement fails whole (trail_outcome_leaves_match) unless it completed exactly
 * as many records as it appended leaves: a leaf no record rebuilds would make its block unprovable.
 */
const PENDING = codec.OUTCOME_CODES.pending;
const complete = (tree: boolean) => ({
  name: tree ? 'call_outcomes_complete_v2' : 'call_outcomes_complete_untreed_v2',
  text: `with input as materialized (
    select * from unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::smallint[], $5::integer[], $6::text[], $7::bytea[])
      with ordinality as i(id, lo, hi, outcome, duration_ms, error_code, leaf, ord)),
  locked as materialized (
    select r.id, r.requested_at, i.ord from (select * from input order by id) i
      ${probe('r.id, r.requested_at', `and r.outcome = ${PENDING} for update`)}),
  numbered as materialized (select l.*, row_number() over (order by l.ord) - 1 as n from locked l),
  tree as materialized (select ${
    tree
      ? 'case when exists (select from numbered) then trail_append(array(select i.leaf from numbered l join input i using (ord) order by l.n)) end'
      : 'null::bigint'
  } as first),
  completed as (
    update call_records r
       set outcome = i.outcome, completed_after_ms = round(extract(epoch from ($8::timestamptz - r.requested_at)) * 1000)::integer,
           duration_ms = i.duration_ms, error_code = i.error_code, outcome_leaf_index = tree.first + l.n
      from numbered l join input i using (ord), tree
     where r.id = l.id and r.requested_at = l.requested_at and r.outcome = ${PENDING}
    returning i.ord)
select array_agg(ord) as ords, trail_outcome_leaves_match((select count(*) from numbered), count(*)) as matched from completed`,
});
const COMPLETE = { on: complete(true), off: complete(false) };

/**
 * Completes the pending records of `completions` at `completedAt`, durably (one statement, its own
 * commit): the positions in `completions` of those it completed. A call named more than once is
 * completed (and its leaf appended) for its first naming only.
 */
export async function completeCallRecords(
  db: Database,
  completions: readonly Completion[],
  completedAt: Date,
  tree = true,
): Promise<Set<number>> {
  const spots = located(completions.map((each) => each.callId));
  // By the record's bytes, as the statement finds records: one row of input per record.
  const once = spots.ids.flatMap((id, k) => (spots.ids.indexOf(id) === k ? [k] : []));
  if (once.length === 0) return new Set();
  const taken = once.map((k) => completions[spots.at[k]!]!);
  const at = completedAt.toISOString();
  const values = [
    once.map((k) => spots.ids[k]),
    once.map((k) => spots.from[k]),
    once.map((k) => spots.to[k]),
    taken.map((each) => codec.OUTCOME_CODES[each.outcome]),
    taken.map((each) => each.durationMs ?? null),
    taken.map((each) => each.errorCode ?? null),
    taken.map((each) => (tree ? leafHash(outcomeLeaf({ callId: each.callId, outcome: each.outcome, completedAt: at })) : null)),
    completedAt,
  ];
  const [row] = await run<{ ords: string[] | null }>(db, COMPLETE[tree ? 'on' : 'off'], values);
  return new Set((row?.ords ?? []).map((ord) => spots.at[once[Number(ord) - 1]!]!));
}
