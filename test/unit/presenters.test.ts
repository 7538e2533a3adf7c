import { presentGrant } from '../../src/grants/presenters';
import { presentCallRecord } from '../../src/trail/presenters';
import type { GrantRow } from '../../src/grants/repository';
import type { CallRecordRow } from '../../src/trail/repositories/call-records';

const grant: GrantRow = {
  id: 'grt_1',
  parent_id: null,
  root_id: 'grt_1',
  depth: 0,
  connection_id: 'con_secret',
  installation_id: 'ins_1',
  broker_id: 'brk_secret',
  target_kind: 'pod',
  target_id: 'pod_1',
  target_pod_id: 'pod_1',
  audience_mode: 'members',
  audience: [],
  tools: ['repos.read_file'],
  write_mode: 'read',
  budget_calls: 10,
  budget_window_ms: '60000',
  expires_at: new Date('2026-12-01T00:00:00Z'),
  created_at: new Date('2026-11-22T00:00:00Z'),
  revoked_at: null,
  resources: { repositories: ['acme/*'] },
  granted_by: 'alice',
  created_by: 'agt_maker',
};

describe('presenters', () => {
  it('show the grant record of CONTRACT §4 and no connection, broker or maker', () => {
    const shown = presentGrant(grant, { status: 'active', audience: ['bob'] });
    expect(Object.keys(shown).sort()).toEqual(
      [
        'audience',
        'audienceMode',
        'budget',
        'createdAt',
        'depth',
        'expiresAt',
        'grantedBy',
        'id',
        'installationId',
        'oauthClient',
        'parentId',
        'resources',
        'revokedAt',
        'rootId',
        'status',
        'target',
        'tools',
        'writeMode',
      ].sort(),
    );
    expect(JSON.stringify(shown)).not.toMatch(/con_secret|brk_secret|agt_maker/);
    expect(shown.budget).toEqual({ calls: 10, windowMs: 60000 });
    expect(shown.expiresAt).toBe('2026-12-01T00:00:00.000Z');
    // Made through the API, not by an OAuth consent.
    expect(shown.oauthClient).toBeNull();
  });

  it('show a call record with its digest, never its error code store or arguments', () => {
    const row: CallRecordRow = {
      id: 'call_1',
      grant_id: 'grt_1',
      tool: 't',
      principal_kind: 'agent',
      principal_id: 'agt_1',
      outcome: 'failed',
      reason: 'allowed',
      approval_id: null,
      decision_id: null,
      error_code: 'E_INTERNAL_DETAIL',
      args_digest: 'sha256:00',
      requested_at: new Date('2026-11-22T00:00:00Z'),
      completed_at: null,
      duration_ms: null,
      leaf_index: 7,
      outcome_leaf_index: null,
    };
    const shown = presentCallRecord(row);
    expect(shown).toMatchObject({ id: 'call_1', principal: { kind: 'agent', id: 'agt_1' }, argsDigest: 'sha256:00', completedAt: null });
    expect(JSON.stringify(shown)).not.toContain('E_INTERNAL_DETAIL');
  });
});
