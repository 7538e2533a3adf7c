import { z } from 'zod';
import { PROBLEMS } from '../errors';

/**
 * What the security team's own packages (policies/org) add to a core decision,
 * as lib.org reports it. A reason is the org's own code: the broker answers it, the call trail
 * records it, and a grant request refused by it is a 403 `org_policy_denied` naming it.
 */
export const OrgReason = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'an org reason is a snake_case code of at most 64 characters');

const OrgFinding = z.strictObject({
  package: z.string(),
  reason: OrgReason,
  message: z.string().max(500),
});

export const OrgFindings = z.strictObject({
  denials: z.array(OrgFinding),
  approvals: z.array(OrgFinding),
  shadow: z.array(OrgFinding.extend({ effect: z.enum(['deny', 'require_approval']) })),
});
export type OrgFindings = z.infer<typeof OrgFindings>;

/** The broker's own reasons: an org rule may not answer one of them. */
export const CORE_CALL_REASONS = [
  'allowed',
  'not_found',
  'revoked',
  'expired',
  'connection_disconnected',
  'tool_not_allowed',
  'write_not_allowed',
  'resource_invalid',
  'resource_unknown',
  'resource_not_allowed',
  'principal_not_in_audience',
  'runtime_stopped',
  'budget_exhausted',
  'session_label_limit',
  'approval_required',
] as const;

const RESERVED = new Set<string>([...CORE_CALL_REASONS, ...Object.keys(PROBLEMS)]);

/**
 * The `org` field of a decision's output. An org rule may not speak for the core: a reason the
 * core or the API already means something by breaks the output schema, so the policy is treated
 * as broken (fail closed) rather than, say, an org `not_found` hiding a grant.
 */
export const OrgOutput = OrgFindings.refine(
  (org) => [...org.denials, ...org.approvals, ...org.shadow].every((finding) => !RESERVED.has(finding.reason)),
  'an org rule used a reason the core decides',
).optional();
