import { decisions } from '../kernel/decisions/catalogue';
import type { RuntimeDeps } from './deps';
import type { AgentPrincipal } from '../kernel/principals';
import { looksLikeId } from '../kernel/ids';
import { enforce } from '../policy/enforce';
import { findEvent, leaseEvents, markAcked, type EventRow } from '../events/delivery';
import { eventsFromOutbox } from '../events/outbox';
import type { Wakeup } from '../events/waker';
import { agentPolled } from '../registry/runtime';

/**
 * How often a waiting long poll looks again without a notification. This is the correctness
 * path (a lease that expired, a NOTIFY lost with a dropped connection); NOTIFY only makes it fast.
 */
export const EVENT_RECHECK_MS = 1000;
/** How long the first long poll of a process waits for the LISTEN connection to come up. */
const LISTEN_START_WAIT_MS = 500;

export interface PollOptions {
  limit: number;
  waitMs: number;
  /** Aborted when the client goes away: a gone client must not lease events it will never see. */
  signal?: AbortSignal;
}

/**
 * One poll: records that the agent showed up (`starting` → `running`), then leases up to `limit`
 * pending events, waiting up to `waitMs` for one to arrive when none is pending.
 */
export async function pollEvents(deps: RuntimeDeps, agent: AgentPrincipal, options: PollOptions): Promise<EventRow[]> {
  const { limit, waitMs, signal } = options;
  const visibilityMs = deps.visibilityMs;
  await agentPolled(deps.db, agent.agentId);
  const lease = async () => {
    await eventsFromOutbox(deps.agentMessages);
    return leaseEvents(deps.db, agent.agentId, limit, visibilityMs, deps.clock.now());
  };
  if (waitMs === 0) return lease();

  // A wait is timed by the timers, on the wall clock: it is no fact about the world.
  const deadline = Date.now() + waitMs;
  await deps.eventWaker.ensureListening(LISTEN_START_WAIT_MS);
  let wakeup: Wakeup | undefined;
  const onAbort = () => wakeup?.cancel();
  signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      if (signal?.aborted) return [];
      // Subscribe before looking, so an event committed between the look and the wait wakes us.
      wakeup = deps.eventWaker.subscribe(agent.agentId);
      const events = await lease();
      const remaining = deadline - Date.now();
      if (events.length > 0 || remaining <= 0) return events;
      await wakeup.wait(Math.min(remaining, EVENT_RECHECK_MS));
    }
  } finally {
    wakeup?.cancel();
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Acknowledges one of the agent's events; a repeat is fine, another agent's event is a 404. */
export async function ackEvent(deps: RuntimeDeps, agent: AgentPrincipal, eventId: string): Promise<void> {
  const event = looksLikeId('event', eventId) ? await findEvent(deps.db, eventId) : undefined;
  enforce(
    deps.policy.evaluate(decisions.runtimeAccess, {
      action: 'event.ack',
      caller: { agent_id: agent.agentId, pod_id: agent.podId },
      event: event ? { agent_id: event.agent_id } : undefined,
    }),
  );
  await markAcked(deps.db, eventId);
}
