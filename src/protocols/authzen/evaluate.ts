import type { CheckAnswer, CheckRequest } from '../../broker/check';
import type { CheckingBroker } from '../../broker/authenticator';
import { checkRequestOf, decisionOf, refusalOf, shortCircuits } from './mapping';
import type { Decision, EvaluationRequest, Semantic } from './schemas';

/** The broker check itself (broker/check): the one use case every protocol's door runs. */
export type BrokerCheck = (broker: CheckingBroker, request: CheckRequest) => Promise<CheckAnswer>;

/** One evaluation: mapped, checked (budget, approval, credential, record, decision log), answered. */
export async function evaluate(check: BrokerCheck, broker: CheckingBroker, evaluation: EvaluationRequest): Promise<Decision> {
  const mapped = checkRequestOf(evaluation);
  if (mapped.kind === 'refused') return mapped.decision;
  try {
    return decisionOf(await check(broker, mapped.request));
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal) return refusal;
    throw error;
  }
}

/**
 * A batch, one evaluation after another in order: each takes its budget unit before the next is
 * decided, so a batch spends exactly as the same checks sent one by one would, and after a
 * short-circuit nothing more is checked, recorded or charged.
 */
export async function evaluateInOrder(
  check: BrokerCheck,
  broker: CheckingBroker,
  evaluations: readonly EvaluationRequest[],
  semantic: Semantic,
): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (const evaluation of evaluations) {
    const decision = await evaluate(check, broker, evaluation);
    decisions.push(decision);
    if (shortCircuits(semantic, decision)) break;
  }
  return decisions;
}
