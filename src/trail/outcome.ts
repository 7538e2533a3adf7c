import { decisions } from '../kernel/decisions/catalogue';
import { ApiError } from '../kernel/errors';
import { enforce } from '../policy/enforce';
import type { TrailDeps } from './deps';
import { brokersOfGrants, completeCallRecords, findCallsForOutcome } from './repositories/call-outcomes';
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
 * Several outcomes of one broker at once, each decided exactly as `recordOutcome` decides it, read
 * and written in a fixed number of statements for the whole batch (repositories/call-outcomes.ts)
 * and committed before the answer. A refusal of one outcome is its own status; anything else
 * (Postgres gone) fails the whole batch with nothing promised, and the broker sends it again: what
 * was recorded then answers `outcome_already_recorded`, so a repeated batch records nothing twice.
 */
export async function recordOutcomes(
  deps: Pick<TrailDeps, 'db' | 'policy' | 'clock' | 'tree'>,
  brokerId: string,
  outcomes: readonly (OutcomeReport & { callId: string })[],
): Promise<{ callId: string; status: OutcomeBatchStatus }[]> {
  const found = await findCallsForOutcome(
    deps.db,
    outcomes.map((each) => each.callId),
  );
  const brokers = await brokersOfGrants(
    deps.db,
    [...found.values()].map((call) => call.grant_id),
  );
  const now = deps.clock.now();
  const statuses: OutcomeBatchStatus[] = [];
  // A call named twice in a batch is written once, for its first report; the next answers as a report sent again.
  const first = new Map<string, number>();
  outcomes.forEach(({ callId }, index) => {
    const call = found.get(index);
    const brokerOfGrant = call && brokers.get(call.grant_id);
    statuses[index] =
      refusal(
        deps.policy.evaluate(decisions.brokerOutcome, {
          broker_id: brokerId,
          grant: brokerOfGrant ? { broker_id: brokerOfGrant } : undefined,
          call: call && brokerOfGrant ? { outcome: call.outcome, age_ms: now - call.requested_at.getTime() } : undefined,
        }),
      ) ?? (first.has(callId) ? 'outcome_already_recorded' : 'recorded');
    if (statuses[index] === 'recorded') first.set(callId, index);
  });
  const writing = [...first.values()];
  const written = await completeCallRecords(
    deps.db,
    writing.map((index) => outcomes[index]!),
    new Date(now),
    deps.tree,
  );
  // Not written: another report of the call was recorded between the read and the write.
  writing.forEach((index, at) => {
    if (!written.has(at)) statuses[index] = 'outcome_already_recorded';
  });
  return outcomes.map(({ callId }, index) => ({ callId, status: statuses[index]! }));
}

/** The status a refused outcome answers in a batch; undefined when the decision allows it. */
function refusal(decision: Parameters<typeof enforce>[0]): OutcomeBatchStatus | undefined {
  try {
    enforce(decision);
    return undefined;
  } catch (error) {
    if (error instanceof ApiError && PER_OUTCOME.has(error.code)) return error.code as OutcomeBatchStatus;
    throw error;
  }
}
