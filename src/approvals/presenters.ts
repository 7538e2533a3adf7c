import { iso } from '../kernel/schema';
import type { ArgsView } from './args-vault';
import type { ApprovalRow } from './repository';

export type ApprovalState = 'pending' | 'approved' | 'denied' | 'expired' | 'used';

/** `expired` is never stored: a pending or approved approval past its expiry, by the clock. */
export function stateOf(row: ApprovalRow, now: number): ApprovalState {
  if ((row.state === 'pending' || row.state === 'approved') && row.expires_at.getTime() <= now) return 'expired';
  return row.state;
}

/** The approval record: bound to grant, call, tool, principal and argument digest. */
export function presentApproval(row: ApprovalRow, now: number, argsView?: ArgsView) {
  return {
    id: row.id,
    grantId: row.grant_id,
    callId: row.call_id,
    tool: row.tool,
    argsDigest: row.args_digest,
    principal: { kind: row.principal_kind, id: row.principal_id },
    state: stateOf(row, now),
    requestedAt: iso(row.requested_at),
    expiresAt: iso(row.expires_at),
    decidedBy: row.decided_by,
    decidedAt: iso(row.decided_at),
    note: row.note,
    // Only for whoever may decide it (approvals/decide, action `read_args`); for anyone else the
    // members are absent, not null.
    ...(argsView ?? {}),
  };
}
