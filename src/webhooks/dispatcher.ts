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
import {
  deleteFinishedBefore,
  leaseDue,
  markAttemptFailed,
  markDelivered,
  webhooksByIds,
  type DeliveryRow,
  type WebhookRow,
} from './repository';
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
/**
 * Deliveries of one pod in flight at once, across every replica: a pod whose receiver never
 * answers holds this many attempts (each up to its timeout), never another pod's.
 */
export const POD_CONCURRENCY = 2;
/** Deliveries one replica has in flight at once, all pods together. */
export const REPLICA_CONCURRENCY = 32;
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
 * after 24 h. Every replica runs one; they split the due rows. Fair across pods: each delivery
 * runs on its own (nothing waits for a batch), a pod has at most POD_CONCURRENCY attempts in
 * flight and each pod's oldest due message is leased before any pod's second, so a receiver that
 * never answers holds its own pod's messages and no one else's. Woken at once by a commit that
 * queued a message or wrote one to the outbox it reads (through the events waker), or by a
 * delivery that finished; else it looks every second.
 */
export class WebhookDispatcher {
  private stopped = false;
  private loop: Promise<void> | undefined;
  private lastCleanupMs = 0;
  private idle: { cancel(): void } | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: DispatcherDeps) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.idle?.cancel();
    await this.loop;
    await Promise.all(this.inFlight);
  }

  /** One pass over what is due now, waiting for the attempts it started; resolves with their count (tests call it). */
  async deliverDue(): Promise<number> {
    const started = await this.launchDue();
    await Promise.all(started);
    return started.length;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const wakeup = wakeOnEither(this.deps.waker, [WEBHOOKS_WAKE_KEY, this.deps.messages.wakeKey]);
      this.idle = wakeup;
      try {
        void this.deps.waker.ensureListening(0);
        // The attempts go on by themselves (each settles and logs its own end); one that ends wakes this loop.
        void (await this.launchDue());
        await this.cleanup();
      } catch (error) {
        this.deps.log.warn({ err: { message: (error as Error).message } }, 'webhook delivery pass failed; retrying');
      }
      if (this.stopped) wakeup.cancel();
      else await wakeup.wait(IDLE_POLL_MS);
    }
  }

  /**
   * Queues what is new in the messages of other domains, then leases what is due, as far as this
   * replica's and each pod's room allow, and starts each attempt.
   */
  private async launchDue(): Promise<Array<Promise<void>>> {
    await this.deps.messages.drain(async (trx, messages) => {
      for (const message of messages) await enqueueWebhookMessage(trx, message, wakeDispatchers);
    });
    const room = REPLICA_CONCURRENCY - this.inFlight.size;
    if (room <= 0) return [];
    const now = this.deps.clock.now();
    const due = await leaseDue(this.deps.db, new Date(now), { leaseMs: LEASE_MS, limit: room, perPod: POD_CONCURRENCY });
    if (due.length === 0) return [];
    const webhooks = new Map((await webhooksByIds(this.deps.db, [...new Set(due.map((d) => d.webhook_id))])).map((w) => [w.id, w]));
    return due.map((delivery) => {
      const attempt = this.attempt(delivery, webhooks.get(delivery.webhook_id))
        .catch((error: unknown) => {
          // Its lease runs out and the row is due again: at least once.
          this.deps.log.warn({ err: { message: (error as Error).message }, messageId: delivery.id }, 'webhook delivery not settled');
        })
        .finally(() => {
          this.inFlight.delete(attempt);
          // Room again, for this pod and this replica: look at once.
          this.idle?.cancel();
        });
      this.inFlight.add(attempt);
      return attempt;
    });
  }

  private async attempt(delivery: DeliveryRow, webhook: WebhookRow | undefined): Promise<void> {
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
