import type { Knex } from 'knex';
import { newId } from '../kernel/ids';

export type EventType =
  | 'grant.created'
  | 'grant.attenuated'
  | 'grant.revoked'
  | 'pod.member_added'
  | 'pod.member_removed'
  | 'agent.updated'
  | 'runtime.start_requested'
  | 'runtime.stop_requested'
  | 'approval.requested'
  | 'approval.decided';

export const EVENTS_CHANNEL = 'agent_events';

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
  await trx('events').insert(
    recipients.map((agentId) => ({
      id: newId('event'),
      agent_id: agentId,
      pod_id: event.podId,
      type: event.type,
      data: event.data,
    })),
  );
  for (const agentId of recipients) {
    await trx.raw('select pg_notify(?, ?)', [EVENTS_CHANNEL, agentId]);
  }
}
