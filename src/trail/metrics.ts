import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from '../kernel/metrics';

/** The call trail's size and age, as the maintenance job last saw it. */
export const trailPartitions = new Gauge({
  name: 'call_record_partitions',
  help: 'Day partitions of the call trail (the default partition not counted)',
  registers: [metricsRegistry],
});

export const trailOldestDay = new Gauge({
  name: 'call_record_oldest_day_timestamp_seconds',
  help: 'Start of the oldest UTC day the call trail keeps, in seconds since the epoch',
  registers: [metricsRegistry],
});

export const trailBytes = new Gauge({
  name: 'call_record_bytes',
  help: 'Bytes of the call trail on disk, indexes included: day partitions, the default partition, held records',
  labelNames: ['part'],
  registers: [metricsRegistry],
});

export const trailDaysDropped = new Counter({
  name: 'call_record_days_dropped_total',
  help: 'Days of the call trail dropped past retention',
  registers: [metricsRegistry],
});

export const trailDaysPacked = new Counter({
  name: 'call_record_days_packed_total',
  help: 'Closed days whose call trail B-tree was rebuilt packed (about 28 bytes a record instead of 40)',
  registers: [metricsRegistry],
});

export const trailExportFailures = new Counter({
  name: 'call_record_export_failures_total',
  help: 'Exports before a drop that failed (the day is kept and tried again)',
  registers: [metricsRegistry],
});
