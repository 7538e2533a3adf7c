import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const requestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration by route template and status',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
  registers: [metricsRegistry],
});

export const brokerDecisions = new Counter({
  name: 'broker_check_decisions_total',
  help: 'Broker pre-call decisions by decision and reason',
  labelNames: ['decision', 'reason'],
  registers: [metricsRegistry],
});

export const httpMetrics = {
  observe(method: string, route: string, status: number, seconds: number): void {
    requestDuration.labels(method, route, String(status)).observe(seconds);
  },
};
