import { Counter } from 'prom-client';
import { metricsRegistry } from '../kernel/metrics';

export const webhookDeliveries = new Counter({
  name: 'webhook_deliveries_total',
  help: 'Webhook delivery attempts by result: delivered, retried (failed, another attempt scheduled), given_up (failed past 24 h)',
  labelNames: ['result'],
  registers: [metricsRegistry],
});
