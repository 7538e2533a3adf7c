import { iso } from '../kernel/schema';
import type { GrantRow } from './repository';
import type { CallRecordRow } from './repositories/call-records';

/** What only the read policy computes: the status from the chain and the effective audience. */
export interface GrantView {
  status: 'active' | 'expired' | 'revoked';
  audience: string[];
}

/** The grant record: no connection id, no broker, no secret. */
export function presentGrant(row: GrantRow, view: GrantView) {
  return {
    id: row.id,
    parentId: row.parent_id,
    rootId: row.root_id,
    depth: row.depth,
    target: { kind: row.target_kind, id: row.target_id },
    audience: view.audience,
    audienceMode: row.audience_mode,
    tools: row.tools,
    writeMode: row.write_mode,
    budget: { calls: row.budget_calls, windowMs: Number(row.budget_window_ms) },
    resources: row.resources,
    expiresAt: iso(row.expires_at),
    createdAt: iso(row.created_at),
    revokedAt: iso(row.revoked_at),
    status: view.status,
    installationId: row.installation_id,
    grantedBy: row.granted_by,
  };
}

export function presentCallRecord(row: CallRecordRow) {
  return {
    id: row.id,
    grantId: row.grant_id,
    tool: row.tool,
    outcome: row.outcome,
    reason: row.reason,
    approvalId: row.approval_id,
    approvedBy: row.approval_decided_by ?? null,
    principal: { kind: row.principal_kind, id: row.principal_id },
    requestedAt: iso(row.requested_at),
    completedAt: iso(row.completed_at),
    durationMs: row.duration_ms,
    argsDigest: row.args_digest,
    credential: row.credential_fingerprint
      ? { fingerprint: `sha256:${row.credential_fingerprint.toString('hex')}`, expiresAt: iso(row.credential_expires_at!) }
      : null,
  };
}
