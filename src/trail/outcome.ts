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

export type OutcomeBatchStatus = 'recorded' | 'outcome_already_recorded' | 'call_denied' | 'outcome_too_late' | 'not_found';

/** The answers a single report gives as a 4xx, which a batch gives per outcome instead. */
const PER_OUTCOME: ReadonlySet<string> = new Set(['outcome_already_recorded', 'call_denied', 'outcome_too_late', 'not_found']);

/**
 * Several outcomes of one broker at once, each exactly as `recordOutcome` takes it (and committed
 * before the answer). A refusal of one outcome is its own status; anything else (Postgres gone)
 * fails the whole batch with nothing promised, and the broker sends it again: what was recorded
 * then answers `outcome_already_recorded`, so a repeated batch records nothing twice.
 */
export async function recordOutcomes(
  deps: Pick<TrailDeps, 'db' | 'policy' | 'clock' | 'tree'>,
  brokerId: string,
  outcomes: readonly (OutcomeReport & { callId: string })[],
): Promise<{ callId: string; status: OutcomeBatchStatus }[]> {
  const settled = await Promise.allSettled(outcomes.map(({ callId, ...report }) => recordOutcome(deps, brokerId, callId, report)));
  return settled.map((each, index) => {
    const callId = outcomes[index]!.callId;
    if (each.status === 'fulfilled') return { callId, status: 'recorded' };
    const error: unknown = each.reason;
    if (error instanceof ApiError && PER_OUTCOME.has(error.code)) return { callId, status: error.code as OutcomeBatchStatus };
    throw error;
  });
}
