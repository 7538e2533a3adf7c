import { Counter, Gauge, Histogram } from 'prom-client';
import { metricsRegistry } from '../kernel/metrics';

export const approvalsByOutcome = new Counter({
  name: 'approvals_total',
  help: 'Approvals of calls by outcome: requested, approved, denied, used',
  labelNames: ['outcome'],
  registers: [metricsRegistry],
});

export const approvalTimeToDecision = new Histogram({
  name: 'approval_time_to_decision_seconds',
  help: 'From a call asking for approval to a human approving or denying it',
  labelNames: ['decision'],
  buckets: [5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600],
  registers: [metricsRegistry],
});

export const inboxWaiting = new Gauge({
  name: 'approvals_inbox_waiting',
  help: 'Long polls of the approvals inbox waiting on this replica (at most 500)',
  registers: [metricsRegistry],
});

/**
 * What waits for a human, read from Postgres when Prometheus scrapes (every replica answers the
 * same; dashboards take the max). A scrape never fails for it: with Postgres away or slower than a
 * second the gauges keep their last values, and the service's own failures are other alerts'.
 */
type PendingNow = () => Promise<{ count: number; oldest: Date | null }>;
let pendingNow: { read: PendingNow; nowMs: () => number } | undefined;
let lastRead: Promise<void> | undefined;

export function watchPendingApprovals(read: PendingNow, nowMs: () => number): void {
  pendingNow = { read, nowMs };
}

const approvalsPending = new Gauge({
  name: 'approvals_pending',
  help: 'Approvals requested and not decided, used or expired (all pods)',
  registers: [metricsRegistry],
  collect: () => readPending(),
});

const oldestPendingAge = new Gauge({
  name: 'approvals_oldest_pending_age_seconds',
  help: 'How long the oldest pending approval has waited for a decision, in seconds (0 when none waits)',
  registers: [metricsRegistry],
  collect: () => readPending(),
});

/** One read of the database per scrape for both gauges. */
function readPending(): Promise<void> {
  const source = pendingNow;
  if (!source) return Promise.resolve();
  lastRead ??= (async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 1000)));
    try {
      const pending = await Promise.race([source.read(), late]);
      if (!pending) return;
      approvalsPending.set(pending.count);
      oldestPendingAge.set(pending.oldest ? Math.max(0, (source.nowMs() - pending.oldest.getTime()) / 1000) : 0);
    } catch {
      // Postgres away: the last values stay, and /readyz and the checks' 503s say why.
    } finally {
      clearTimeout(timer);
      setImmediate(() => (lastRead = undefined));
    }
  })();
  return lastRead;
}
