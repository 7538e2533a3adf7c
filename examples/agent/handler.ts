import type { ApprovalWaits } from './approvals';
import type { AgentEvent } from './client';

/**
 * What this example agent does with an event: it works out a short note. A real agent would
 * review a pull request or call a tool through the broker here. Whatever it does must be safe to
 * run again for the same event, because a crash before the result is persisted means the event
 * comes back and is handled again; only once the result is persisted is the event done.
 */
export function handleEvent(event: AgentEvent): { note: string } {
  const data = event.data;
  switch (event.type) {
    case 'pod.member_added':
      return { note: `welcome ${String(data.memberId)} (${String(data.kind)}) to ${event.podId}` };
    case 'pod.member_removed':
      return { note: `${String(data.memberId)} left ${event.podId}` };
    case 'agent.updated':
      return { note: `my record changed: ${JSON.stringify(data.changed ?? [])}` };
    case 'runtime.stop_requested':
      // The broker already denies this seat's calls; the agent just stops starting new work.
      return { note: 'runtime stopped: pausing work, still polling' };
    case 'runtime.start_requested':
      return { note: 'runtime started: resuming work' };
    case 'grant.created':
    case 'grant.attenuated':
    case 'grant.revoked': {
      // created/attenuated carry the grant record; revoked carries its id.
      const grantId = (data.grant as { id?: string } | undefined)?.id ?? data.grantId;
      return { note: `${event.type} ${String(grantId ?? '')}`.trim() };
    }
    case 'approval.requested':
      return { note: `${String(data.tool)} waits for a human's approval ${String(data.approvalId)}` };
    case 'approval.decided':
      // An agent that makes calls re-sends the approved one: withApprovals below.
      return { note: `approval ${String(data.approvalId)} ${String(data.state)}` };
    default:
      return { note: `ignored unknown event type ${event.type}` };
  }
}

/**
 * The handler of an agent that makes tool calls: `approval.decided` goes to the calls waiting for
 * a human (re-sent with the approval, or dropped), everything else to `handle`. The answer of a
 * re-sent call is the event's result, persisted before the event is acknowledged.
 */
export function withApprovals(waits: ApprovalWaits, handle: (event: AgentEvent) => unknown = handleEvent) {
  return (event: AgentEvent): unknown => (event.type === 'approval.decided' ? waits.onDecided(event) : handle(event));
}
