import type { PodAction, RegistryDeps } from './deps';
import type { HumanPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import { emitEvent } from '../events/outbox';
import { hashToken, mintToken } from '../credentials/tokens';
import {
  deleteAgent,
  deleteRuntimeToken,
  findAgentByName,
  insertAgent,
  insertRuntimeToken,
  listRuntimeTokens,
  type AgentRow,
  type RuntimeTokenRow,
} from './repository';

/** Authorizes the action on the pod, then finds the named agent (404 when there is none). */
export async function agentForAction(
  deps: RegistryDeps,
  caller: HumanPrincipal,
  podId: string,
  name: string,
  action: PodAction,
): Promise<AgentRow> {
  await deps.pods.authorize(caller, podId, action);
  const agent = await findAgentByName(deps.db, podId, name);
  if (!agent) throw new ApiError('not_found', 'no agent of that name is installed in the pod');
  return agent;
}

export async function installAgent(
  deps: RegistryDeps,
  caller: HumanPrincipal,
  podId: string,
  input: { name: string; displayName?: string; description?: string },
): Promise<AgentRow> {
  await deps.pods.authorize(caller, podId, 'agents.install');
  return deps.db.transaction(async (trx) => {
    const others = await deps.pods.agentIds(trx, podId);
    const agent = await insertAgent(trx, {
      id: newId('agent'),
      pod_id: podId,
      name: input.name,
      display_name: input.displayName ?? null,
      description: input.description ?? null,
      installed_by: caller.userId,
      // Installing an agent means it is meant to run: it is `starting` until its first poll.
      // `runtime-stop` is the kill switch that takes it out of service.
      desired_state: 'running',
      runtime_state: 'starting',
      runtime_changed_at: new Date(deps.clock.now()),
    });
    if (!agent) throw new ApiError('agent_exists', `an agent named ${input.name} is already installed in the pod`);
    await deps.pods.addAgentMember(trx, podId, agent.id, caller.userId);
    await emitEvent(trx, {
      type: 'pod.member_added',
      podId,
      data: { podId, memberId: agent.id, kind: 'agent', role: 'member', name: agent.name },
      agentIds: others,
    });
    return agent;
  });
}

/** Uninstalling ends the seat: its tokens stop working at once and it leaves every audience. */
export async function uninstallAgent(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string): Promise<void> {
  const agent = await agentForAction(deps, caller, podId, name, 'agents.uninstall');
  await deps.invalidation.change(async (trx, touch) => {
    // Touched first: which trees the agent reaches is read from its row, deleted below.
    await touch('agent', agent.id);
    await touch('pod', podId);
    await deleteAgent(trx, agent);
    await emitEvent(trx, {
      type: 'pod.member_removed',
      podId,
      data: { podId, memberId: agent.id, kind: 'agent', name: agent.name },
      agentIds: await deps.pods.agentIds(trx, podId),
    });
  });
}

export async function createRuntimeToken(
  deps: RegistryDeps,
  caller: HumanPrincipal,
  podId: string,
  name: string,
  input: { name: string; expiresAt?: string },
): Promise<{ row: RuntimeTokenRow; token: string }> {
  const agent = await agentForAction(deps, caller, podId, name, 'tokens.create');
  if (input.expiresAt && new Date(input.expiresAt).getTime() <= deps.clock.now()) {
    throw new ApiError('invalid_request', 'expiresAt must be in the future', {
      errors: [{ path: 'body.expiresAt', message: 'must be in the future' }],
    });
  }
  const token = mintToken('art');
  const row = await insertRuntimeToken(deps.db, {
    id: newId('runtimeToken'),
    agent_id: agent.id,
    name: input.name,
    token_hash: hashToken(token),
    created_by: caller.userId,
    expires_at: input.expiresAt ? new Date(input.expiresAt) : null,
  });
  return { row, token };
}

export async function listTokens(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string): Promise<RuntimeTokenRow[]> {
  const agent = await agentForAction(deps, caller, podId, name, 'tokens.list');
  return listRuntimeTokens(deps.db, agent.id);
}

export async function removeToken(deps: RegistryDeps, caller: HumanPrincipal, podId: string, name: string, tokenId: string): Promise<void> {
  const agent = await agentForAction(deps, caller, podId, name, 'tokens.delete');
  // A token already gone still stamps: a repeat re-confirms a deletion that answered 503.
  const deleted = await deps.invalidation.change(async (trx, touch) => {
    await touch('agent', agent.id);
    return deleteRuntimeToken(trx, agent.id, tokenId);
  });
  if (!deleted) throw new ApiError('not_found', 'no such runtime token');
}
