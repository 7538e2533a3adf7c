import type { Knex } from 'knex';
import { idBytes, idTimeMs } from '../../kernel/ids';
import { withApprovals } from './call-record-approvals';
import { decode, withShape, type CallRecordRow, type Queryable, type StoredRow } from './call-record-rows';

export type { CallRecordRow, NewCallRecord } from './call-record-rows';

/**
 * The call trail, `call_records`: one row per broker check, written before its answer leaves,
 * completed once by the call's outcome. Partitioned by day on `requested_at`, stored in binary
 * (codec.ts); `held_call_records` keeps a held tree's rows of days already dropped,
 * and every read of a grant's trail reads both. Owned here, by the trail domain: the broker's
 * check writes through the trail's writer (trail/writer.ts), the maintenance job
 * (trail/maintenance.ts) makes and drops days. Here: a record by its call's id; the check's writes
 * are call-record-inserts.ts's, completions by the calls' outcomes call-outcomes.ts's, the listings
 * call-record-listings.ts's, what became of the approvals records name call-record-approvals.ts's.
 */

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
