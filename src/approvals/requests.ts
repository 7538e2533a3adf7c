import type { Knex } from 'knex';
import type { Database } from '../db/database';
import type { ApprovalBinding } from '../kernel/decisions/approvals';
import { newId } from '../kernel/ids';
import { iso } from '../kernel/schema';
import type { ApprovalArgsVault } from './args-vault';
import { tellOfApproval } from './messages';
import { approvalsByOutcome } from './metrics';
import { presentApproval } from './presenters';
import { findApproval, findOpenApproval, insertApproval, useApproval, type ApprovalRow } from './repository';

/**
 * The broker's side of approvals: a call that needs one gets an approval bound to its grant,
 * tool, principal and argument digest; a re-sent call brings it back and uses it once. The call's
 * record is written with the approval, in one transaction, by a writer the wiring hands over
 * (`recordIn`): this domain knows nothing of the record but that it must commit with the approval.
 */
export interface ApprovalRequest {
  callId: string;
  grantId: string;
  podId: string;
  tool: string;
  argsDigest: string;
  principal: { kind: 'user' | 'agent'; id: string };
  requestedAt: Date;
  ttlMs: number;
  /** The earliest expiry of the grant's chain: an approval never outlives the grant it is for. */
  grantExpiresAtMs: number;
  /** The call's arguments, kept sealed for the deciders while the approval is pending. */
  args: Record<string, unknown>;
  /** The broker check's input: what the policy's mask rule judges. */
  checkInput: object;
}

/** The approval a re-sent check brings, as broker/check reads it. */
export interface ApprovalFact {
  id: string;
  found: boolean;
  grant_id?: string;
  tool?: string;
  principal?: { kind: 'user' | 'agent'; id: string };
  args_digest?: string;
  state?: 'pending' | 'approved' | 'denied' | 'used';
  expires_at_ms?: number;
}

/**
 * An approval taken for one call and held (its row locked) until the call's record is written
 * with it, or it is given back. Opaque: whoever holds it never sees the transaction.
 */
export interface ApprovalClaim<Record> {
  readonly approvalId: string;
  /** Writes the call's record and commits it with the approval's use; on a failure nothing is kept. Its receipt. */
  commitWith(record: Record): Promise<number | undefined>;
  /** Gives the approval back, still approved (a budget that turned out full, a record not written). */
  release(): Promise<void>;
}

export interface CallApprovals<Record> {
  factOf(approvalId: string): Promise<ApprovalFact>;
  /**
   * The open (approved, else pending; unexpired) approval of the identical call, whatever MCP
   * session or process asked for it, or undefined: a call that comes back without its approval's
   * id is still the call a human was asked about.
   */
  openFactOf(call: ApprovalBinding): Promise<ApprovalFact | undefined>;
  /**
   * Takes the approval for this call: a claim for exactly one of any number of concurrent
   * re-sends (on any replica), undefined for the others and for one no longer approved.
   */
  claim(approvalId: string, callId: string, at: Date): Promise<ApprovalClaim<Record> | undefined>;
  /**
   * Asks a human: the pending approval, its message in the outbox and the call's record
   * (`recordFor` the approval) in one transaction; neither is left without the other.
   */
  ask(
    request: ApprovalRequest,
    recordFor: (approval: { id: string }) => Record,
  ): Promise<{ id: string; expiresAt: string; consoleUrl: string; receipt: number | undefined }>;
}

export interface CallApprovalsDeps<Record> {
  db: Database;
  vault: ApprovalArgsVault;
  /** The approval's page in the web console, for its webhooks. */
  consoleUrl: (approvalId: string) => string;
  /** Writes a call's record in the approval's transaction: its receipt (the trail's leaf index). */
  recordIn: (unit: Knex.Transaction, record: Record) => Promise<number | undefined>;
}

export function createCallApprovals<Record>(deps: CallApprovalsDeps<Record>): CallApprovals<Record> {
  return {
    factOf: (approvalId) => approvalFact(deps.db, approvalId),
    async openFactOf(call) {
      const row = await findOpenApproval(deps.db, call);
      return row ? factOf(row) : undefined;
    },
    async claim(approvalId, callId, at) {
      const unit = await deps.db.transaction();
      try {
        if (!(await useApproval(unit, approvalId, callId, at))) {
          await unit.rollback();
          return undefined;
        }
      } catch (error) {
        await unit.rollback().catch(() => undefined);
        throw error;
      }
      return {
        approvalId,
        async commitWith(record) {
          let receipt: number | undefined;
          try {
            receipt = await deps.recordIn(unit, record);
            await unit.commit();
          } catch (error) {
            if (!unit.isCompleted()) await unit.rollback().catch(() => undefined);
            throw error;
          }
          approvalsByOutcome.labels('used').inc();
          return receipt;
        },
        async release() {
          if (!unit.isCompleted()) await unit.rollback().catch(() => undefined);
        },
      };
    },
    async ask(request, recordFor) {
      const asked = await deps.db.transaction(async (trx) => {
        const approval = await requestApproval(trx, request, deps);
        return { ...approval, receipt: await deps.recordIn(trx, recordFor(approval)) };
      });
      approvalsByOutcome.labels('requested').inc();
      return asked;
    },
  };
}

/** Creates the pending approval in `trx`, and its `approval.requested` message. */
async function requestApproval(
  trx: Knex.Transaction,
  request: ApprovalRequest,
  deps: Pick<CallApprovalsDeps<unknown>, 'vault' | 'consoleUrl'>,
): Promise<{ id: string; expiresAt: string; consoleUrl: string }> {
  const id = newId('approval');
  // A human deciding after the grant has expired would decide nothing (the grant is no longer
  // usable), so the approval expires with it rather than show `pending` until its own TTL.
  const expiresAt = new Date(Math.min(request.requestedAt.getTime() + request.ttlMs, request.grantExpiresAtMs));
  const row = {
    id,
    grant_id: request.grantId,
    call_id: request.callId,
    tool: request.tool,
    args_digest: request.argsDigest,
    principal_kind: request.principal.kind,
    principal_id: request.principal.id,
    state: 'pending' as const,
    requested_at: request.requestedAt,
    expires_at: expiresAt,
    ...deps.vault.seal(id, request.argsDigest, request.args, request.checkInput),
  };
  await insertApproval(trx, row);
  const approval = presentApproval(
    { ...row, decided_by: null, decided_at: null, note: null, used_by_call_id: null },
    request.requestedAt.getTime(),
  );
  const consoleUrl = deps.consoleUrl(id);
  await tellOfApproval(trx, { type: 'approval.requested', podId: request.podId, at: request.requestedAt, approval, consoleUrl });
  return { id, expiresAt: iso(expiresAt), consoleUrl };
}

async function approvalFact(db: Database, id: string): Promise<ApprovalFact> {
  const row = await findApproval(db, id);
  if (!row) return { id, found: false };
  return factOf(row);
}

function factOf(row: ApprovalRow): ApprovalFact {
  return {
    id: row.id,
    found: true,
    grant_id: row.grant_id,
    tool: row.tool,
    principal: { kind: row.principal_kind, id: row.principal_id },
    args_digest: row.args_digest,
    state: row.state,
    expires_at_ms: row.expires_at.getTime(),
  };
}
