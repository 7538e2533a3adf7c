import type { Database } from '../db/database';
import type { Logger } from '../kernel/log';
import { deleteAckedEvents } from './delivery';

export interface RetentionTimer {
  stop(): void;
}

/** Often enough that acked events outlive their retention by at most a quarter of it (≤ 10 min). */
export function retentionSweepIntervalMs(retentionMs: number): number {
  return Math.min(Math.max(Math.floor(retentionMs / 4), 15_000), 600_000);
}

/**
 * Deletes acknowledged events older than the retention, periodically. The timer is unref'd so it
 * never keeps a process alive; every replica may run it (the delete is idempotent and batched).
 */
export function startEventRetention(db: Database, retentionMs: number, log: Logger): RetentionTimer {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      const deleted = await deleteAckedEvents(db, retentionMs);
      if (deleted > 0) log.info({ deleted, retentionMs }, 'deleted acknowledged events past retention');
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'event retention sweep failed; retrying on the next tick');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void sweep(), retentionSweepIntervalMs(retentionMs));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
