import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from '../kernel/metrics';

export const policyRevisionInfo = new Gauge({
  name: 'policy_revision_info',
  help: 'The policy revision serving decisions (1 for the active one)',
  labelNames: ['revision'],
  registers: [metricsRegistry],
});

export const policyLoadFailures = new Counter({
  name: 'policy_load_failures_total',
  help: 'Policies (modules or bundles) refused: unreadable, unsigned, badly signed, incomplete or lacking a decision',
  registers: [metricsRegistry],
});

// The last refused load, as /readyz shows it (policyLastError): a counter alone says that loads
// fail, not that the one an operator just published is the one refused, nor why.
export const policyLastLoadFailureTime = new Gauge({
  name: 'policy_last_load_failure_timestamp_seconds',
  help: 'When the last refused policy load happened (Unix seconds); 0 once a load succeeds, as /readyz policyLastError clears',
  registers: [metricsRegistry],
});

export const policyLastLoadFailureInfo = new Gauge({
  name: 'policy_last_load_failure_info',
  help:
    'The last refused policy load since the last good one (1): the revision it claimed (unknown when unreadable, ' +
    'invalid when not a plain token) and a short error class; no series once a load succeeds',
  labelNames: ['refused_revision', 'error'],
  registers: [metricsRegistry],
});
