import { decisions } from '../kernel/decisions/catalogue';
import { ApiError } from '../kernel/errors';
import { enforce } from '../policy/enforce';
import type { TrailDeps } from './deps';
import { NO_PENDING_CALLS, type PendingCalls } from './pending-calls';
import { brokersOfGrants, completeCallRecords, findCallsForOutcome, type CallForOutcome } from './repositories/call-outcomes';
import { findCallForOutcome, findCallRecordAsRead, type CallRecordRow } from './repositories/call-records';

export interface OutcomeReport {
  outcome: 'succeeded' | 'failed';
  durationMs?: number;
  errorCode?: string;
}

/**
 * Completes a pending call record, once, for the grant's own broker (policies/broker/outcome.rego
 * decides): the completion's statement writes only a pending record, which settles a race between
 * two reports of the same call. The completed record as the trail reads it.
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
  // The batch's one statement: the record locked while pending, completed with its leaf appended.
  const written = await completeCallRecords(deps.db, [{ callId, ...report }], new Date(now), deps.tree);
  if (written.size === 0) throw new ApiError('outcome_already_recorded');
  return (await findCallRecordAsRead(deps.db, callId, new Date(now)))!;
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
  deps: Pick<TrailDeps, 'db' | 'policy' | 'clock' | 'tree' | 'pendingCalls'>,
  brokerId: string,
  outcomes: readonly (OutcomeReport & { callId: string })[],
): Promise<{ callId: string; status: OutcomeBatchStatus }[]> {
  const remembered = deps.pendingCalls ?? NO_PENDING_CALLS;
  const calls = await callsOf(
    deps.db,
    remembered,
    outcomes.map((each) => each.callId),
  );
  const brokers = await brokersOf(deps.db, remembered, calls);
  const now = deps.clock.now();
  const statuses: OutcomeBatchStatus[] = [];
  // A call named twice in a batch is written once, for its first report; the next answers as a report sent again.
  const first = new Map<string, number>();
  outcomes.forEach(({ callId }, index) => {
    const call = calls[index];
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
  for (const { callId } of outcomes) remembered.forget(callId);
  return outcomes.map(({ callId }, index) => ({ callId, status: statuses[index]! }));
}

/** Each call as the decision reads it, in order: as this replica wrote it pending, else as Postgres has it. */
async function callsOf(db: TrailDeps['db'], remembered: PendingCalls, callIds: readonly string[]) {
  const calls: Array<CallForOutcome | undefined> = callIds.map((callId) => {
    const call = remembered.recall(callId);
    return call && { outcome: 'pending', requested_at: call.requestedAt, grant_id: call.grantId };
  });
  const unknown = calls.flatMap((call, index) => (call ? [] : [index]));
  if (unknown.length === 0) return calls;
  const found = await findCallsForOutcome(
    db,
    unknown.map((index) => callIds[index]!),
  );
  unknown.forEach((index, at) => (calls[index] = found.get(at)));
  return calls;
}

/** The broker of each call's grant: as read before, else read now. */
async function brokersOf(db: TrailDeps['db'], remembered: PendingCalls, calls: ReadonlyArray<CallForOutcome | undefined>) {
  const brokers = new Map<string, string>();
  const unknown: string[] = [];
  for (const call of calls) {
    if (!call || brokers.has(call.grant_id)) continue;
    const known = remembered.brokerOf(call.grant_id);
    if (known) brokers.set(call.grant_id, known);
    else unknown.push(call.grant_id);
  }
  for (const [grantId, broker] of await brokersOfGrants(db, unknown)) {
    brokers.set(grantId, broker);
    remembered.learnBroker(grantId, broker);
  }
  return brokers;
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
