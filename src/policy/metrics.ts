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

// By reason, beside policy_load_failures_total (which counts them too): a bundle server re-serving
// an old bundle, or answering more than the caps, is an attack or a misconfiguration, not a typo.
export const policyBundleRefusals = new Counter({
  name: 'policy_bundle_refusals_total',
  help:
    'Bundles refused for their age or their size: rollback (issued before the serving one, or not saying when), ' +
    'too_large (the download or what it unpacks to passes POLICY_BUNDLE_MAX_BYTES or its multiple)',
  labelNames: ['reason'],
  registers: [metricsRegistry],
});
// Both series from the start: an alert on increase() sees the first refusal, not a series born at 1.
for (const reason of ['rollback', 'too_large']) policyBundleRefusals.labels(reason).inc(0);
