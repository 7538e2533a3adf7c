import { decisions } from '../../kernel/decisions/catalogue';
import { ApiError } from '../../kernel/errors';
import type { BrokerDeps } from '../deps';
import { checkInput } from '../policy-input';
import type { Resolved, Verdict } from './stages';

export type DecideDeps = Pick<BrokerDeps, 'policy' | 'trustAssertedPrincipal' | 'localTime' | 'treeInputs'>;

/**
 * The second stage: pure (no I/O). broker/check decides on the resolved facts; a refusal of the
 * request itself (404 another broker's grant, 401 an invalid subject token, 403 an asserted
 * principal or a named subject that is not the token's) is thrown, every other outcome is a
 * verdict the call record will keep.
 */
export function decide(deps: DecideDeps, call: Resolved): Verdict {
  const input = checkInput(
    {
      brokerId: call.broker.brokerId,
      tool: call.request.tool,
      args: call.request.args,
      argsDigest: call.argsDigest,
      approval: call.approval,
      subject: call.subject,
      trustAssertedPrincipal: deps.trustAssertedPrincipal,
      now: call.nowMs,
      localTime: deps.localTime(call.nowMs),
    },
    call.chain,
    call.facts,
    call.session,
    deps.treeInputs,
  );
  const decision = deps.policy.evaluate(decisions.brokerCheck, input);
  if (decision.reasons.includes('not_found')) throw new ApiError('not_found', 'no such grant');
  if (decision.reasons.includes('subject_token_invalid')) throw new ApiError('subject_token_invalid');
  if (decision.reasons.includes('principal_assertion_refused')) {
    throw new ApiError('principal_assertion_refused', "forward the caller's own credential as subjectToken");
  }
  const principal = call.subject.principal;
  // broker/check refuses a call without a principal (subject_token_invalid): never reached.
  if (!principal) throw new Error('broker/check went on without a verified principal');
  const named = call.request.namedSubject;
  if (named && (named.kind !== principal.kind || named.id !== principal.id)) {
    throw new ApiError('subject_mismatch', 'the named subject is not the principal of the forwarded token');
  }

  const { decisionId, explanation } = decision;
  const exact = decision.exact_calls ? { exactCalls: true } : {};
  if (decision.allow) {
    const labels = decision.labels ?? [];
    return { kind: 'allow', decisionId, principal, spendsApproval: decision.consumes_approval === true, labels, ...exact };
  }
  if (decision.reason === 'approval_required') return { kind: 'ask', decisionId, principal, explanation, checkInput: input, ...exact };
  const message = decision.org?.denials.find((finding) => finding.reason === decision.reason)?.message;
  return { kind: 'deny', decisionId, principal, reason: String(decision.reason), ...(message ? { message } : {}), explanation, ...exact };
}
