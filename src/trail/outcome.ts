import { decisions } from '../kernel/decisions/catalogue';
import { ApiError } from '../kernel/errors';
import { enforce } from '../policy/enforce';
import type { TrailDeps } from './deps';
import { completeCallRecord, findCallForOutcome, type CallRecordRow } from './repositories/call-records';

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
  deps: Pick<TrailDeps, 'db' | 'policy' | 'clock' | 'tree'>,
  brokerId: string,
  callId: string,
  report: OutcomeReport,
): Promise<CallRecordRow> {
  const found = await findCallForOutcome(deps.db, callId);
  const now = deps.clock.now();
  enforce(
    deps.policy.evaluate(decisions.brokerOutcome, {
      broker_id: brokerId,
      grant: found ? { broker_id: found.broker_id } : undefined,
      call: found ? { outcome: found.outcome, age_ms: now - found.requested_at.getTime() } : undefined,
    }),
  );
  const updated = await completeCallRecord(deps.db, callId, report, new Date(now), deps.tree);
  if (!updated) throw new ApiError('outcome_already_recorded');
  return updated;
}
