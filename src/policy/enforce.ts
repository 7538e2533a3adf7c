import { ApiError, PROBLEMS, isProblemCode, type ProblemCode } from '../kernel/errors';

/**
 * Turns a refusal into the API error its reasons name. Policy reasons are CONTRACT error codes;
 * `not_found` (outside the read scope) wins over everything so existence is never revealed;
 * otherwise the lowest status wins (403 before 409 before 422) and every reason is listed.
 */
export function enforce(decision: { allow: boolean; reasons: readonly string[] }, detail?: string): void {
  if (decision.allow) return;
  const codes = decision.reasons.map((reason): ProblemCode => (isProblemCode(reason) ? reason : 'internal_error'));
  if (codes.includes('not_found')) throw new ApiError('not_found');
  const sorted = [...codes].sort((a, b) => PROBLEMS[a].status - PROBLEMS[b].status);
  const first = sorted[0] ?? 'internal_error';
  throw new ApiError(first, detail ?? PROBLEMS[first].title, { reasons: [...decision.reasons] });
}
