import type { Knex } from 'knex';
import { newId } from '../kernel/ids';
import { insertDeliveries, subscribersOf, type WebhookEventType } from './repository';

export interface WebhookMessage {
  type: WebhookEventType;
  podId: string;
  /** The message's `data`: what happened, never a call's arguments. */
  data: Record<string, unknown>;
  /** The service clock's now: the message's `timestamp`, and when its 24 h of attempts start. */
  at: Date;
}

/** Wakes the dispatchers (after commit) when a message is queued. */
export interface DeliveryWaker {
  notify(trx: Knex.Transaction): Promise<void>;
}

/**
 * Queues a message for each of the pod's webhooks that subscribe to its type, in the caller's
 * transaction (the outbox): it exists exactly when the change it reports commits, and the
 * dispatchers deliver it after. Due at once.
 */
export async function enqueueWebhookMessage(trx: Knex.Transaction, message: WebhookMessage, waker: DeliveryWaker): Promise<void> {
  const subscribers = await subscribersOf(trx, message.podId, message.type);
  if (subscribers.length === 0) return;
  const payload = { type: message.type, timestamp: message.at.toISOString(), data: message.data };
  await insertDeliveries(
    trx,
    subscribers.map((webhook) => ({
      id: newId('webhookMessage'),
      webhook_id: webhook.id,
      type: message.type,
      payload,
      created_at: message.at,
      next_attempt_at: message.at,
    })),
  );
  await waker.notify(trx);
}
