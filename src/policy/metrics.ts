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
