import type { Knex } from 'knex';
import { newId } from '../kernel/ids';
import type { OutboxFeed } from '../kernel/outbox';
import { insertEvents, notifyAgents, type EventType } from './repository';

export type { EventType } from './repository';

export interface NewEvent {
  type: EventType;
  podId: string;
  data: Record<string, unknown>;
  /** The installed agents that receive it (one delivery row each). */
  agentIds: readonly string[];
}

/**
 * Writes events inside the caller's transaction, so an event exists exactly when the change that
 * caused it commits (and occurred when that transaction began: Postgres's now()). The NOTIFY is delivered at commit too; pollers use it only as a wake-up hint.
 */
export async function emitEvent(trx: Knex.Transaction, event: NewEvent): Promise<void> {
  const recipients = [...new Set(event.agentIds)];
  if (recipients.length === 0) return;
  await insertEvents(
    trx,
    recipients.map((agentId) => ({ id: newId('event'), agent_id: agentId, pod_id: event.podId, type: event.type, data: event.data })),
  );
  await notifyAgents(trx, recipients);
}

/**
 * Wakes, at commit, whoever waits on `key` on the events waker (src/events/waker.ts) besides
 * agents' polls: the webhook dispatchers wait on `webhooks`. A hint only, as for agents.
 */
export async function notifyAtCommit(trx: Knex.Transaction, key: string): Promise<void> {
  await notifyAgents(trx, [key]);
}

/**
 * Turns what another domain's outbox holds for agents (the approvals': `approval.requested` and
 * `approval.decided` for the agent whose call it is) into their events, in the transaction that
 * takes the messages. Answers how many messages it took.
 */
export function eventsFromOutbox(feed: OutboxFeed<NewEvent, Knex.Transaction>): Promise<number> {
  return feed.drain(async (trx, messages) => {
    for (const message of messages) await emitEvent(trx, message);
  });
}
