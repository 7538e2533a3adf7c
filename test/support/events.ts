import type { InstalledAgent } from './world';
import { eventsFromOutbox } from '../../src/events/outbox';
import type { TestService } from './service';

export interface PolledEvent {
  id: string;
  type: string;
  podId: string;
  occurredAt: string;
  deliveryCount: number;
  data: Record<string, unknown>;
}

/** Polls the agent's events over HTTP and returns them (expects a 200). */
export async function poll(
  service: TestService,
  agent: InstalledAgent,
  query: { limit?: number; waitMs?: number } = {},
): Promise<PolledEvent[]> {
  const res = await service.http.get('/api/agents/runtime/events').query(query).set(agent.auth);
  if (res.status !== 200) throw new Error(`poll answered ${res.status}: ${JSON.stringify(res.body)}`);
  expect(res.body.nextCursor).toBeNull();
  return res.body.items as PolledEvent[];
}

/**
 * Acks every event of the agent straight in the database (leased ones included, which a poll would
 * not see until their lease ends, and those the approvals' outbox still holds for it), so a test
 * starts from an empty queue.
 */
export async function drain(service: TestService, agent: InstalledAgent): Promise<void> {
  await eventsFromOutbox(service.deps.approvalMessages.agents);
  await service.deps.db('events').where({ agent_id: agent.agentId }).whereNull('acked_at').update({ acked_at: service.deps.db.fn.now() });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
