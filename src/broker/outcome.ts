import { decisions } from '../kernel/decisions/catalogue';
import { ApiError } from '../kernel/errors';
import { enforce } from '../policy/enforce';
import type { CallRecordRow } from '../grants/repository';
import type { BrokerDeps } from './deps';

export interface OutcomeReport {
  outcome: 'succeeded' | 'failed';
  durationMs?: number;
  errorCode?: string;
}

/**
 * Completes a pending call record, once, for the grant's own broker (policies/broker/outcome.rego
 * decides). The conditional UPDATE settles a race between two reports of the same call.
 */
export async function recordOutcome(
  deps: Pick<BrokerDeps, 'db' | 'policy'>,
  brokerId: string,
  callId: string,
  report: OutcomeReport,
): Promise<CallRecordRow> {
  const found = await deps
    .db('call_records as c')
    .join('grants as g', 'g.id', 'c.grant_id')
    .where('c.id', callId)
    .first<{ outcome: string; broker_id: string } | undefined>('c.outcome', 'g.broker_id');
  enforce(
    deps.policy.evaluate(decisions.brokerOutcome, {
      broker_id: brokerId,
      grant: found ? { broker_id: found.broker_id } : undefined,
      call: found ? { outcome: found.outcome } : undefined,
    }),
  );
  const [updated] = await deps
    .db('call_records')
    .where({ id: callId, outcome: 'pending' })
    .update({
      outcome: report.outcome,
      completed_at: deps.db.fn.now(),
      duration_ms: report.durationMs ?? null,
      error_code: report.errorCode ?? null,
    })
    .returning('*');
  if (!updated) throw new ApiError('outcome_already_recorded');
  return updated as CallRecordRow;
}
