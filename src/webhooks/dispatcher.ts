import type { Knex } from 'knex';
import type { KeyRing } from '../credentials/sealed-box';
import type { Database } from '../db/database';
import type { EventWaker } from '../events/waker';
import type { Clock } from '../kernel/clock';
import type { Logger } from '../kernel/log';
import type { OutboxFeed } from '../kernel/outbox';
import { notifyAtCommit } from '../events/outbox';
import { enqueueWebhookMessage, type WebhookMessage } from './enqueue';
import { webhookDeliveries } from './metrics';
import { deleteFinishedBefore, leaseDue, markAttemptFailed, markDelivered, webhooksByIds, type DeliveryRow } from './repository';
import { openSecret } from './secrets';
import { sendWebhook, type SendLimits, type SendResult } from './send';

/** The key the dispatchers wait on in the events waker (src/events/outbox.ts notifyAtCommit). */
export const WEBHOOKS_WAKE_KEY = 'webhooks';

/** Attempts go on for this long after a message is written; then it is given up. */
export const DELIVERY_WINDOW_MS = 24 * 60 * 60 * 1000;
const FIRST_RETRY_MS = 5_000;
const LONGEST_RETRY_MS = 60 * 60 * 1000;
/** Longer than any attempt (its timeout), so a live attempt's row is never taken twice. */
const LEASE_MS = 60_000;
const BATCH = 20;
const IDLE_POLL_MS = 1_000;
const KEEP_FINISHED_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * The wait before attempt `attempts + 1`, after `attempts` failed ones: 5 s, doubling each time,
 * at most an hour. Undefined when the next attempt would come after the delivery window.
 */
export function nextAttemptAt(createdAtMs: number, attempts: number, nowMs: number): number | undefined {
  const wait = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), LONGEST_RETRY_MS);
  const next = nowMs + wait;
  return next <= createdAtMs + DELIVERY_WINDOW_MS ? next : undefined;
}

export interface DispatcherDeps {
  db: Database;
  keys: KeyRing;
  clock: Clock;
  log: Logger;
  waker: EventWaker;
  limits: SendLimits;
  /**
   * The messages other domains write for webhooks (the approvals' outbox: `approval.requested`
   * and `approval.decided`): each pass first queues what is new there for the pod's webhooks.
   */
  messages: OutboxFeed<WebhookMessage, Knex.Transaction>;
}

const wakeDispatchers = { notify: (trx: Knex.Transaction) => notifyAtCommit(trx, WEBHOOKS_WAKE_KEY) };

/**
 * Delivers the webhook outbox, at least once: leases what is due (by the service clock), sends
 * each, marks it delivered or schedules the next attempt with exponential backoff, and gives it up
 * after 24 h. Every replica runs one; they split the due rows. Woken at once by a commit that
 * queued a message (through the events waker), else it looks every second.
 */
export class WebhookDispatcher {
  private stopped = false;
  private running: Promise<number> | undefined;
  private loop: Promise<void> | undefined;
  private lastCleanupMs = 0;
  private idle: { cancel(): void } | undefined;

  constructor(private readonly deps: DispatcherDeps) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.idle?.cancel();
    await this.loop;
    await this.running;
  }

  /** One pass over what is due now; resolves with how many attempts it made (tests call it). */
  deliverDue(): Promise<number> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const wakeup = wakeOnEither(this.deps.waker, [WEBHOOKS_WAKE_KEY, this.deps.messages.wakeKey]);
      this.idle = wakeup;
      let attempted = 0;
      try {
        void this.deps.waker.ensureListening(0);
        attempted = await this.deliverDue();
        await this.cleanup();
      } catch (error) {
        this.deps.log.warn({ err: { message: (error as Error).message } }, 'webhook delivery pass failed; retrying');
      }
      if (attempted >= BATCH || this.stopped) wakeup.cancel();
      else await wakeup.wait(IDLE_POLL_MS);
    }
  }

  private async pass(): Promise<number> {
    await this.deps.messages.drain(async (trx, messages) => {
      for (const message of messages) await enqueueWebhookMessage(trx, message, wakeDispatchers);
    });
    const now = this.deps.clock.now();
    const due = await leaseDue(this.deps.db, new Date(now), LEASE_MS, BATCH);
    if (due.length === 0) return 0;
    const webhooks = new Map((await webhooksByIds(this.deps.db, [...new Set(due.map((d) => d.webhook_id))])).map((w) => [w.id, w]));
    await Promise.all(
      due.map(async (delivery) => {
        const webhook = webhooks.get(delivery.webhook_id);
        // Deleted meanwhile: its deliveries went with it (cascade); nothing to send.
        if (!webhook) return;
        const secret = openSecret(this.deps.keys, webhook);
        const result: SendResult = secret
          ? await sendWebhook(
              { url: webhook.url, secret },
              { id: delivery.id, timestampMs: this.deps.clock.now(), body: JSON.stringify(delivery.payload) },
              this.deps.limits,
            )
          : { ok: false, status: null, error: 'no configured key opens the signing secret' };
        await this.settle(delivery, result);
      }),
    );
    return due.length;
  }

  private async settle(delivery: DeliveryRow, result: SendResult): Promise<void> {
    const nowMs = this.deps.clock.now();
    if (result.ok) {
      await markDelivered(this.deps.db, delivery.id, new Date(nowMs), result.status);
      webhookDeliveries.labels('delivered').inc();
      return;
    }
    const next = nextAttemptAt(delivery.created_at.getTime(), delivery.attempts, nowMs);
    await markAttemptFailed(this.deps.db, delivery.id, {
      at: new Date(nowMs),
      next: next === undefined ? undefined : new Date(next),
      status: result.status,
      error: result.error.slice(0, 200),
    });
    webhookDeliveries.labels(next === undefined ? 'given_up' : 'retried').inc();
    // The URL is the pod admins' own; the payload is never logged.
    this.deps.log.warn(
      {
        webhookId: delivery.webhook_id,
        messageId: delivery.id,
        attempt: delivery.attempts,
        status: result.status,
        error: result.error,
        gaveUp: next === undefined,
      },
      'webhook delivery failed',
    );
  }

  /** Delivered and given-up messages are kept a week (for operators), then deleted. */
  private async cleanup(): Promise<void> {
    const now = this.deps.clock.now();
    if (now - this.lastCleanupMs < 60_000) return;
    this.lastCleanupMs = now;
    await deleteFinishedBefore(this.deps.db, new Date(now - KEEP_FINISHED_MS), 5_000);
  }
}

/** One wake-up for several keys of the events waker: whichever is notified first. */
function wakeOnEither(waker: EventWaker, keys: readonly string[]): { wait(ms: number): Promise<void>; cancel(): void } {
  const wakeups = keys.map((key) => waker.subscribe(key));
  const cancel = () => wakeups.forEach((wakeup) => wakeup.cancel());
  return {
    async wait(ms) {
      await Promise.race(wakeups.map((wakeup) => wakeup.wait(ms)));
      cancel();
    },
    cancel,
  };
}
