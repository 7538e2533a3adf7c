import type { Knex } from 'knex';
import type { RegistryDeps } from './deps';
import type { HumanPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { emitEvent } from '../events/outbox';
import { listAgentsOfPod, lockAgent, recordPoll, setDesiredState, updateAgentRecord, type AgentRow } from './repository';
import { agentForAction } from './installs';

/** The agent row again, locked: it may have been uninstalled since the permission check. */
async function lockInstalled(trx: Knex.Transaction, agent: AgentRow): Promise<AgentRow> {
  const current = await lockAgent(trx, agent.id);
  if (!current) throw new ApiError('not_found', 'no agent of that name is installed in the pod');
  return current;
}

export async function readAgent(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string): Promise<AgentRow> {
  return agentForAction(deps, caller, podId, name, 'agents.read');
}

/** The pod's installed agents, by name: what a pod member may read of each one (`agents.read`). */
export async function listAgents(
  deps: RegistryDeps,
  caller: HumanPrincipal,
  podId: string,
  page: { limit: number; cursor?: string },
): Promise<{ items: AgentRow[]; nextCursor: string | null }> {
  await deps.pods.authorize(caller, podId, 'agents.read');
  const rows = await listAgentsOfPod(deps.db, podId, page.limit + 1, page.cursor);
  const items = rows.slice(0, page.limit);
  return { items, nextCursor: rows.length > page.limit ? items[items.length - 1]!.name : null };
}

export async function readRuntime(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string): Promise<AgentRow> {
  return agentForAction(deps, caller, podId, name, 'runtime.read');
}

export interface AgentRecordChanges {
  displayName?: string | null;
  description?: string | null;
}

/**
 * Updates the display name and description. Only a real change is written and announced
 * (`agent.updated`, to the agent itself); sending the current values is a no-op.
 */
export async function updateAgent(
  deps: RegistryDeps,
  caller: HumanPrincipal,
  podId: string,
  name: string,
  input: AgentRecordChanges,
): Promise<AgentRow> {
  const agent = await agentForAction(deps, caller, podId, name, 'agents.update');
  return deps.db.transaction(async (trx) => {
    const current = await lockInstalled(trx, agent);
    const changes: Partial<Pick<AgentRow, 'display_name' | 'description'>> = {};
    if (input.displayName !== undefined && input.displayName !== current.display_name) changes.display_name = input.displayName;
    if (input.description !== undefined && input.description !== current.description) changes.description = input.description;
    if (Object.keys(changes).length === 0) return current;
    const updated = await updateAgentRecord(trx, current.id, changes);
    await emitEvent(trx, {
      type: 'agent.updated',
      podId,
      data: {
        agentId: updated.id,
        name: updated.name,
        displayName: updated.display_name,
        description: updated.description,
        changed: Object.keys(changes).map((column) => (column === 'display_name' ? 'displayName' : 'description')),
        updatedBy: caller.userId,
      },
      agentIds: [updated.id],
    });
    return updated;
  });
}

type Transition = {
  desired: AgentRow['desired_state'];
  action: 'runtime.start' | 'runtime.stop';
  event: 'runtime.start_requested' | 'runtime.stop_requested';
};

const START: Transition = { desired: 'running', action: 'runtime.start', event: 'runtime.start_requested' };
const STOP: Transition = { desired: 'stopped', action: 'runtime.stop', event: 'runtime.stop_requested' };

/**
 * Moves the desired state, idempotently: when it already is the requested one nothing is written
 * and no event is sent. The broker's cached facts are invalidated every time, a repeat included,
 * so repeating a stop re-confirms the kill switch on every replica (say it answered 503
 * invalidation_pending while this replica was cut off from Redis).
 */
async function transition(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string, to: Transition): Promise<AgentRow> {
  const agent = await agentForAction(deps, caller, podId, name, to.action);
  return deps.invalidation.change(async (trx, touch) => {
    const current = await lockInstalled(trx, agent);
    await touch('agent', agent.id);
    if (current.desired_state === to.desired) return current;
    const updated = await setDesiredState(trx, current.id, to.desired);
    await emitEvent(trx, {
      type: to.event,
      podId,
      data: {
        agentId: updated.id,
        name: updated.name,
        desiredState: updated.desired_state,
        state: updated.runtime_state,
        requestedBy: caller.userId,
      },
      agentIds: [updated.id],
    });
    return updated;
  });
}

export function startRuntime(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string): Promise<AgentRow> {
  return transition(deps, caller, podId, name, START);
}

export function stopRuntime(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string): Promise<AgentRow> {
  return transition(deps, caller, podId, name, STOP);
}

/**
 * A poll is the agent showing up (the runtime surface calls this): recorded on its row, and a
 * `starting` runtime becomes `running`.
 */
export function agentPolled(db: RegistryDeps['db'], agentId: string): Promise<void> {
  return recordPoll(db, agentId);
}
