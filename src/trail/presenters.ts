import { iso } from '../kernel/schema';
import type { CallRecordRow } from './repositories/call-records';

/** A call record as the API shows it: the arguments' digest, never the arguments; a minted token's fingerprint, never the token. */
export function presentCallRecord(row: CallRecordRow) {
  return {
    id: row.id,
    grantId: row.grant_id,
    rootId: row.root_id ?? row.grant_id,
    tool: row.tool,
    decision: row.answered?.decision ?? 'deny',
    outcome: row.outcome,
    reason: row.reason,
    approvalId: row.approval_id,
    decisionId: row.decision_id,
    approvedBy: row.approval_decided_by ?? null,
    principal: { kind: row.principal_kind, id: row.principal_id },
    requestedAt: iso(row.requested_at),
    completedAt: iso(row.completed_at),
    durationMs: row.duration_ms,
    argsDigest: row.args_digest,
    credential: row.credential_fingerprint
      ? { fingerprint: `sha256:${row.credential_fingerprint.toString('hex')}`, expiresAt: iso(row.credential_expires_at!) }
      : null,
    leafIndex: row.leaf_index,
    outcomeLeafIndex: row.outcome_leaf_index,
  };
}
