/**
 * Speed-up: the calls this replica's checks wrote pending, kept for their outcomes, and the broker
 * of each grant an outcome batch read.
 *
 * Trades: memory (at most MAX_CALLS calls and MAX_GRANTS grants, a few hundred bytes each) for the
 * two reads an outcome batch makes before it decides (its calls' records, their grants' brokers):
 * a gateway's outcomes come back to the replica that answered its checks within milliseconds, and
 * what the check wrote is what those reads would find. Only a record made durable is remembered
 * (the statement that wrote it resolved, which is before the check's own write resolves), and only
 * while it may still be pending and young (MAX_AGE_MS); a call reported once is forgotten. What is
 * remembered never decides alone: the outcome decision still runs on it, and the completion's
 * statement still writes only a record that is pending, so a call another replica completed first
 * answers `outcome_already_recorded`, as after a read. A grant's broker is set when the grant is
 * made and never changes, so it is kept as read.
 *
 * Off (SPEEDUPS=off): trail/pending-calls.ts's NO_PENDING_CALLS, every batch reads.
 */
import { LruCache } from '../kernel/lru';
import type { PendingCalls, RecalledCall } from '../trail/pending-calls';
import type { WriteRecords } from '../trail/writer';

const MAX_CALLS = 20_000;
const MAX_GRANTS = 10_000;
/** An outcome later than this after its check is read from Postgres, as without the speed-up. */
const MAX_AGE_MS = 10 * 60_000;

export function pendingCalls(now: () => number = Date.now): PendingCalls {
  const calls = new LruCache<string, RecalledCall>(MAX_CALLS);
  const brokers = new LruCache<string, string>(MAX_GRANTS);
  return {
    // Around the statement rather than each check's write: the group commit's batch resolves once
    // for all its records, so remembering them costs one continuation per statement.
    insert(inner: WriteRecords): WriteRecords {
      return async (rows) => {
        const indices = await inner(rows);
        for (const row of rows) {
          if (row.outcome === 'pending') calls.set(row.id, { grantId: row.grant_id, requestedAt: row.requested_at });
        }
        return indices;
      };
    },
    recall(callId) {
      const call = calls.get(callId);
      if (!call) return undefined;
      if (now() - call.requestedAt.getTime() <= MAX_AGE_MS) return call;
      calls.delete(callId);
      return undefined;
    },
    forget: (callId) => calls.delete(callId),
    brokerOf: (grantId) => brokers.get(grantId),
    learnBroker: (grantId, brokerId) => brokers.set(grantId, brokerId),
  };
}
