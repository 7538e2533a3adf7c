import type { Knex } from 'knex';
import type { Database } from '../db/database';
import { emitEvent, notifyAtCommit } from '../events/outbox';
import { approvalsWakeKey } from './inbox-wait';
import { newId } from '../kernel/ids';
import { iso } from '../kernel/schema';
import type { ApprovalWebhooks } from '../webhooks/approval-messages';

export type { ApprovalWebhooks } from '../webhooks/approval-messages';
import type { ApprovalArgsVault } from './args-vault';
import { approvalsByOutcome } from './metrics';
import { presentApproval } from './presenters';
import { findApproval, findOpenApproval, insertApproval, useApproval, type ApprovalRow } from './repository';

/**
 * The broker's side of approvals: a call that needs one gets an approval bound to
 * its grant, tool, principal and argument digest; a re-sent call brings it back and uses it once.
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

/**
 * Creates the pending approval in the caller's unit of work (the call's record commits with it);
 * an agent principal hears of it (`approval.requested`) through the outbox, in the same unit.
 */
export async function requestApproval(
  trx: Knex.Transaction,
  request: ApprovalRequest,
  keep: { vault: ApprovalArgsVault; webhooks: ApprovalWebhooks },
): Promise<{ id: string; expiresAt: string }> {
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
    ...keep.vault.seal(id, request.argsDigest, request.args, request.checkInput),
  };
  await insertApproval(trx, row);
  const record = presentApproval(
    { ...row, decided_by: null, decided_at: null, note: null, used_by_call_id: null },
    request.requestedAt.getTime(),
  );
  await keep.webhooks.requested(trx, request.podId, record, request.requestedAt);
  // The deciders' inbox long polls, on every replica.
  await notifyAtCommit(trx, approvalsWakeKey(request.podId));
  if (request.principal.kind === 'agent') {
    await emitEvent(trx, {
      type: 'approval.requested',
      podId: request.podId,
      data: { approvalId: id, grantId: request.grantId, callId: request.callId, tool: request.tool, expiresAt: iso(expiresAt) },
      agentIds: [request.principal.id],
    });
  }
  return { id, expiresAt: iso(expiresAt) };
}

/** The approval a re-sent check brings, as broker/check reads it. */
export async function approvalFact(db: Database, id: string) {
  const row = await findApproval(db, id);
  if (!row) return { id, found: false };
  return factOf(row);
}

/**
 * The open approval of the identical call (same grant, tool, principal and arguments), as
 * broker/check reads it, or undefined: a call that comes back without its approval's id (another
 * MCP session, another gateway process) is still the call a human was asked about.
 */
export async function openApprovalFact(
  db: Database,
  call: { grantId: string; tool: string; principal: { kind: 'user' | 'agent'; id: string }; argsDigest: string; now: Date },
) {
  const row = await findOpenApproval(db, call);
  return row ? factOf(row) : undefined;
}

function factOf(row: ApprovalRow) {
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

/**
 * Takes the approval for this call in the caller's unit of work: true for exactly one of any
 * number of concurrent re-sends (the row stays locked until that unit commits or rolls back).
 */
export function claimApproval(trx: Knex.Transaction, id: string, callId: string, now: Date): Promise<boolean> {
  return useApproval(trx, id, callId, now);
}

/** Counted once the unit of work that requested or used an approval has committed. */
export function countApproval(outcome: 'requested' | 'used'): void {
  approvalsByOutcome.labels(outcome).inc();
}
