import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import * as codec from './codec';
import { decisionOfOutcome } from '../tree/leaves';

export type Queryable = Database | Knex.Transaction;

/** The one query method a batch needs of a pooled node-postgres client. */
export interface PgConnection {
  query(statement: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * A call record's row as the trail's queries share it: how a check writes it, how Postgres answers
 * it and how it reads back (decoded from the binary columns of codec.ts, its shape joined), and the
 * SQL fragments every query of `call_records` and `held_call_records` names a grant and a row by.
 * The queries themselves: call-record-inserts.ts (the check's writes), call-records.ts (a record
 * by its call, its completion), call-record-listings.ts (listings, the export's days),
 * leaf-records.ts (the tree's lookups), call-windows.ts (the budgets' rebuild).
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
export interface StoredRow {
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
export const COMPLETED_AT = `r.requested_at + r.completed_after_ms * interval '1 millisecond'`;
export const completedAfterMs = (row: Pick<NewCallRecord, 'requested_at' | 'completed_at'>) =>
  row.completed_at ? row.completed_at.getTime() - row.requested_at.getTime() : null;

/** A query of rows of the trail (`r`) read back with their shape. */
export const READ = `r.id, r.grant_id, s.tool, s.principal_kind, s.principal_id, r.outcome, r.reason, r.approval_id, r.decision_id,
  r.error_code, r.args_digest, r.requested_at, ${COMPLETED_AT} as completed_at, r.duration_ms, r.credential_fingerprint,
  r.credential_expires_at, r.leaf_index, r.outcome_leaf_index`;
export const withShape = (rows: string) => `select ${READ} from ${rows} join call_record_shapes s on s.code = r.shape`;

export function decode(row: StoredRow): CallRecordRow {
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

/** The records with their grants' roots (a member of each record's leaf). */
export async function withRoots(db: Queryable, rows: CallRecordRow[]): Promise<CallRecordRow[]> {
  const grantIds = [...new Set(rows.map((row) => row.grant_id))];
  if (grantIds.length === 0) return rows;
  const grants: Array<{ id: string; root_id: string }> = await db('grants').whereIn('id', grantIds).select('id', 'root_id');
  const roots = new Map(grants.map((grant) => [grant.id, grant.root_id]));
  return rows.map((row) => ({ ...row, root_id: roots.get(row.grant_id) ?? row.grant_id }));
}

/** The outcomes of an allowed call: what counts against a budget. */
export const ALLOWED_OUTCOMES = [codec.OUTCOME_CODES.pending, codec.OUTCOME_CODES.succeeded, codec.OUTCOME_CODES.failed].join(', ');
