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
