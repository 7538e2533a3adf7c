import { watchPendingApprovals } from './approvals/metrics';
import { pendingApprovalsNow } from './approvals/repository';
import { startArgsSweep } from './approvals/args-sweep';
import type { Config } from './config';
import type { KeyRing } from './credentials/sealed-box';
import type { Database } from './db/database';
import { startEventRetention } from './events/retention';
import type { EventWaker } from './events/waker';
import type { Clock } from './kernel/clock';
import type { Logger } from './kernel/log';
import { startTrailMaintenance } from './trail/maintenance';
import type { Checkpointer } from './trail/tree/checkpointer';
import { WebhookDispatcher, type DispatcherDeps } from './webhooks/dispatcher';
import { DEFAULT_SEND_LIMITS } from './webhooks/send';

/**
 * The service's background work, started once the services it serves exist: the events'
 * retention, the sweep of settled approvals' arguments, the pending-approvals gauge, webhook
 * delivery (WEBHOOK_DELIVERY), the trail's signed checkpoints and its days' maintenance.
 */
export function startJobs(input: {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  keyRing: KeyRing;
  eventWaker: EventWaker;
  approvalMessages: { webhooks: DispatcherDeps['messages'] };
  checkpointer: Checkpointer;
}) {
  const { config, db, clock, log, keyRing, eventWaker, approvalMessages, checkpointer } = input;
  const retention = startEventRetention(db, config.EVENT_RETENTION_MS, log.child({ component: 'events' }));
  const approvalArgsSweep = startArgsSweep(db, clock, log.child({ component: 'approvals' }));
  watchPendingApprovals(
    () => pendingApprovalsNow(db, new Date(clock.now())),
    () => clock.now(),
  );
  const webhookDispatcher = new WebhookDispatcher({
    db,
    keys: keyRing,
    clock,
    log: log.child({ component: 'webhooks' }),
    waker: eventWaker,
    limits: { ...DEFAULT_SEND_LIMITS, allowPrivate: config.WEBHOOK_ALLOW_PRIVATE },
    messages: approvalMessages.webhooks,
  });
  if (config.WEBHOOK_DELIVERY) webhookDispatcher.start();
  checkpointer.start();
  const trailMaintenance = startTrailMaintenance({
    db,
    clock,
    log: log.child({ component: 'call-trail' }),
    retentionDays: config.CALL_RECORD_RETENTION_DAYS,
    archiveDir: config.CALL_RECORD_ARCHIVE_DIR,
  });
  return {
    approvalArgsSweep,
    webhookDispatcher,
    trailMaintenance,
    /** Called by close() before the database, Redis and the events' listener the jobs use are closed. */
    async stop(): Promise<void> {
      retention.stop();
      approvalArgsSweep.stop();
      await webhookDispatcher.stop();
      await trailMaintenance.stop();
      await checkpointer.stop();
    },
  };
}
