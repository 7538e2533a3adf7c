import { Registry, collectDefaultMetrics } from 'prom-client';

/** The one registry of the process: every layer registers its metrics here; /metrics serves it. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });
