import { ApiError, PROBLEMS, isProblemCode, type ProblemCode } from '../kernel/errors';
import type { OrgFindings } from '../kernel/decisions/org';

/**
 * Turns a refusal into the API error its reasons name. Core policy reasons are the API's error
 * codes; `not_found` (outside the read scope) wins over everything so existence is never
 * revealed; otherwise the lowest status wins (403 before 409 before 422) and every reason is
 * listed. A reason of the security team's own rules (policies/org) is `org_policy_denied`, with
 * the rule's message as the detail. A 400 lists the request's fields the policy names.
 */
export function enforce(
  decision: { allow: boolean; reasons: readonly string[]; org?: OrgFindings; unmatchable_patterns?: readonly string[] },
  detail?: string,
): void {
  if (decision.allow) return;
  const orgDenial = (reason: string) => decision.org?.denials.find((finding) => finding.reason === reason);
  const codes = decision.reasons.map((reason): ProblemCode =>
    orgDenial(reason) ? 'org_policy_denied' : isProblemCode(reason) ? reason : 'internal_error',
  );
  if (codes.includes('not_found')) throw new ApiError('not_found');
  const sorted = [...codes].sort((a, b) => PROBLEMS[a].status - PROBLEMS[b].status);
  const first = sorted[0] ?? 'internal_error';
  const firstOrg = first === 'org_policy_denied' ? decision.reasons.map(orgDenial).find(Boolean) : undefined;
  // A 400 names the fields it refuses: the patterns the policy found unmatchable.
  const errors = (decision.unmatchable_patterns ?? []).map((finding) => {
    const [dimension, pattern] = finding.split(': ', 2);
    return { path: `body.resources.${dimension}`, message: `${JSON.stringify(pattern)} could only match values that are not canonical` };
  });
  throw new ApiError(first, detail ?? (firstOrg?.message || PROBLEMS[first].title), {
    reasons: [...decision.reasons],
    ...(PROBLEMS[first].status === 400 && errors.length > 0 ? { errors } : {}),
  });
}
