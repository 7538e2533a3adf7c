import type { WriteRecords } from './writer';

/** A call whose record this replica wrote pending (an allowed call waiting for its outcome). */
export interface RecalledCall {
  grantId: string;
  requestedAt: Date;
}

/**
 * What the trail may remember of the calls it wrote, for their outcomes: a speed-up
 * (src/speedups/pending-calls.ts) that spares an outcome batch its reads of what the check just
 * wrote. What it answers only stands in for those reads: the completion's own statement still
 * completes a record only while it is pending, so a call reported elsewhere first answers
 * `outcome_already_recorded` as it would have.
 */
export interface PendingCalls {
  /**
   * The trail's statement (what its writer calls with a batch of records), remembering each record
   * of a batch it made durable pending: one continuation per statement, not one per check.
   */
  insert(inner: WriteRecords): WriteRecords;
  /** A call this replica wrote pending, not yet reported here; undefined when it is not remembered. */
  recall(callId: string): RecalledCall | undefined;
  /** A call reported (whatever became of the report): nothing more to remember of it. */
  forget(callId: string): void;
  /** A grant's broker as read before (it never changes once the grant exists); undefined when not known. */
  brokerOf(grantId: string): string | undefined;
  learnBroker(grantId: string, brokerId: string): void;
}

/** Nothing remembered: every outcome batch reads its calls and their grants. */
export const NO_PENDING_CALLS: PendingCalls = {
  insert: (inner) => inner,
  recall: () => undefined,
  forget: () => undefined,
  brokerOf: () => undefined,
  learnBroker: () => undefined,
};
