import { CheckBody } from '../../broker/schemas';
import type { CheckAnswer, CheckRequest } from '../../broker/check';
import { ApiError } from '../../kernel/errors';
import type { CallPrincipal } from '../../kernel/principals';
import type { Decision, EvaluationRequest, EvaluationsRequest, Semantic } from './schemas';

/**
 * AuthZEN 1.0 ↔ the broker check, as pure functions: an evaluation becomes the check's input (or
 * is refused without a check), the check's answer becomes a decision, and a batch's defaults and
 * evaluation semantics are applied. No rule is decided here: the check decides.
 */

export type Mapped = { kind: 'check'; request: CheckRequest } | { kind: 'refused'; decision: Decision };

const SUBJECT_KINDS: Readonly<Record<string, CallPrincipal['kind']>> = { agent: 'agent', user: 'user' };

function refused(reason: string, status: number, message: string): Mapped {
  return { kind: 'refused', decision: refusal(reason, status, message) };
}

function refusal(reason: string, status: number, message: string): Decision {
  return { decision: false, context: { reason, error: { status, message } } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One evaluation as the broker check's input: `subject.properties.token` is the forwarded
 * credential and `subject.id` must be its principal (the check refuses otherwise), `action.name`
 * the tool, `resource.id` the grant and `resource.properties.args` the arguments. The check's own
 * body schema judges the result, so both doors accept the same calls.
 */
export function checkRequestOf(evaluation: EvaluationRequest): Mapped {
  const { subject, action, resource, context } = evaluation;
  if (resource.type !== 'grant') return refused('resource_type_unsupported', 400, 'resource.type must be `grant`');
  const kind = Object.hasOwn(SUBJECT_KINDS, subject.type) ? SUBJECT_KINDS[subject.type] : undefined;
  if (!kind) return refused('subject_type_unsupported', 400, 'subject.type must be `agent` or `user`');
  const token = subject.properties?.token;
  if (typeof token !== 'string' || token === '') {
    return refused('subject_token_missing', 400, "subject.properties.token must carry the subject's own credential");
  }
  const args = resource.properties?.args ?? {};
  if (!isRecord(args)) return refused('invalid_request', 400, 'resource.properties.args must be an object');
  const parsed = CheckBody.safeParse({
    grantId: resource.id,
    tool: action.name,
    subjectToken: token,
    args,
    ...(context?.credential === true ? { credential: true } : {}),
    ...(typeof context?.approvalId === 'string' ? { approvalId: context.approvalId } : {}),
  });
  if (!parsed.success) {
    // The path and the rule only: never the value, which may be the token.
    const issue = parsed.error.issues[0]!;
    const field = { grantId: 'resource.id', tool: 'action.name', subjectToken: 'subject.properties.token' }[String(issue.path[0])];
    return refused('invalid_request', 400, `${field ?? String(issue.path.join('.'))}: ${issue.message}`);
  }
  return { kind: 'check', request: { ...parsed.data, namedSubject: { kind, id: subject.id } } };
}

/** The check's answer as a decision: true only on allow; the context says why and names the call. */
export function decisionOf(answer: CheckAnswer): Decision {
  return {
    decision: answer.decision === 'allow',
    context: {
      reason: answer.reason,
      callId: answer.callId,
      ...(answer.explanation ? { explanation: answer.explanation } : {}),
      ...(answer.approvalId ? { approvalId: answer.approvalId } : {}),
      ...(answer.retryAfterMs !== undefined ? { retryAfterMs: answer.retryAfterMs } : {}),
      ...(answer.message ? { message: answer.message } : {}),
      ...(answer.credential ? { credential: answer.credential } : {}),
    },
  };
}

/**
 * The check's refusals of one evaluation (it checked no call) as that evaluation's decision; any
 * other failure (a dependency down, a fault) is the whole request's, so none is answered true.
 * Another broker's grant is refused exactly as an unknown one.
 */
const ANSWERED_REFUSALS: ReadonlySet<string> = new Set([
  'not_found',
  'subject_token_invalid',
  'subject_mismatch',
  'principal_assertion_refused',
  'credential_unavailable',
]);

export function refusalOf(error: unknown): Decision | undefined {
  if (!(error instanceof ApiError) || !ANSWERED_REFUSALS.has(error.code)) return undefined;
  return refusal(error.code, error.status, error.code === 'not_found' ? 'Resource not found' : error.message);
}

/** Whether a batch stops after this decision (the evaluations after it are not checked). */
export function shortCircuits(semantic: Semantic, decision: Decision): boolean {
  if (semantic === 'deny_on_first_deny') return !decision.decision;
  if (semantic === 'permit_on_first_permit') return decision.decision;
  return false;
}

/**
 * A batch's evaluations with the top-level defaults applied key by key (a member's own key wins
 * whole). Without members (absent or empty), the top level is the one evaluation and the answer
 * is a single decision. A key that neither gives is a 400, as AuthZEN requires.
 */
export function evaluationsOf(batch: EvaluationsRequest): { single: boolean; evaluations: EvaluationRequest[] } {
  const members = batch.evaluations?.length ? batch.evaluations : [{}];
  const evaluations = members.map((member, index) => {
    const subject = member.subject ?? batch.subject;
    const action = member.action ?? batch.action;
    const resource = member.resource ?? batch.resource;
    const context = member.context ?? batch.context;
    const missing = [subject ? '' : 'subject', action ? '' : 'action', resource ? '' : 'resource'].filter(Boolean);
    if (!subject || !action || !resource) {
      const where = batch.evaluations?.length ? `evaluations[${index}]` : 'the request';
      throw new ApiError('invalid_request', `${where} has no ${missing.join(', ')} and no top-level default gives one`, {
        errors: missing.map((key) => ({ path: batch.evaluations?.length ? `evaluations.${index}.${key}` : key, message: 'Required' })),
      });
    }
    return { subject, action, resource, ...(context ? { context } : {}) };
  });
  return { single: !batch.evaluations?.length, evaluations };
}
