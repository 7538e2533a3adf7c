import { iso } from '../kernel/schema';
import type { GrantRow } from './repository';

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
    oauthClient: row.oauth_client_id ? { clientId: row.oauth_client_id, name: row.oauth_client_name ?? row.oauth_client_id } : null,
  };
}
