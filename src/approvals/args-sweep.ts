import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import type { Logger } from '../kernel/log';
import { deleteTakenMessages, eraseExpiredArgs } from './repository';

/** How often expired approvals lose their kept arguments (a read of one erases them at once). */
export const ARGS_SWEEP_INTERVAL_MS = 5_000;
const BATCH_SIZE = 1_000;

export interface ArgsSweep {
  /** One sweep now, to its end: how many approvals lost their arguments. */
  run(): Promise<number>;
  stop(): void;
}

/**
 * Erases the kept arguments of approvals past their expiry, by the service's clock, in batches;
 * deletes the outbox's messages every reader has taken.
 * A decision, a use and a revocation erase them in their own statements; expiry alone is a
 * moment no statement marks, so this sweep (on every replica: the update is idempotent) does.
 */
export function startArgsSweep(db: Database, clock: Clock, log: Logger, intervalMs = ARGS_SWEEP_INTERVAL_MS): ArgsSweep {
  let running: Promise<number> | undefined;
  const sweep = async () => {
    let erased = 0;
    for (;;) {
      const count = await eraseExpiredArgs(db, new Date(clock.now()), { batchSize: BATCH_SIZE });
      erased += count;
      if (count < BATCH_SIZE) break;
    }
    // The outbox's messages every reader has taken go with the same sweep.
    while ((await deleteTakenMessages(db, BATCH_SIZE)) === BATCH_SIZE);
    return erased;
  };
  const run = () => {
    running ??= sweep().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer = setInterval(() => {
    run().catch((err: Error) => log.warn({ err: { message: err.message } }, 'approval arguments sweep failed; retrying on the next tick'));
  }, intervalMs);
  timer.unref();
  return { run, stop: () => clearInterval(timer) };
}
