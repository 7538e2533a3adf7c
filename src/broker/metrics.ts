import { Counter } from 'prom-client';
import { metricsRegistry } from '../kernel/metrics';

export const brokerDecisions = new Counter({
  name: 'broker_check_decisions_total',
  help: 'Broker pre-call decisions by decision and reason',
  labelNames: ['decision', 'reason'],
  registers: [metricsRegistry],
});
