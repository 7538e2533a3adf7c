import { Histogram } from 'prom-client';
import { metricsRegistry } from '../kernel/metrics';

const requestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration by route template and status',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
  registers: [metricsRegistry],
});

export const httpMetrics = {
  observe(method: string, route: string, status: number, seconds: number): void {
    requestDuration.labels(method, route, String(status)).observe(seconds);
  },
};
