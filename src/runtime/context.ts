import { decisions } from '../kernel/decisions/catalogue';
import type { RuntimeDeps } from './deps';
import type { AgentPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { enforce } from '../policy/enforce';
import { podById, podMembers, type MemberRow, type PodRow } from '../pods/facts';
import { agentById, type AgentRow } from '../registry/facts';
import { usableGrants } from './usable-grants';

/** The calling agent's own row; gone only if it was uninstalled during this request. */
async function callingAgent(deps: RuntimeDeps, agent: AgentPrincipal): Promise<AgentRow> {
  const row = await agentById(deps.db, agent.agentId);
  if (!row)
    throw new ApiError('unauthenticated', 'the agent is no longer installed', {}, { 'WWW-Authenticate': 'Bearer realm="grant-broker"' });
  return row;
}

/** A runtime token authenticates one seat in one pod: that seat is the one installation. */
export async function installationsOf(deps: RuntimeDeps, agent: AgentPrincipal): Promise<AgentRow[]> {
  return [await callingAgent(deps, agent)];
}

export async function podsOf(deps: RuntimeDeps, agent: AgentPrincipal): Promise<PodRow[]> {
  const pod = await podById(deps.db, agent.podId);
  return pod ? [pod] : [];
}

export interface PodContext {
  pod: PodRow;
  agent: AgentRow;
  members: MemberRow[];
  grants: Awaited<ReturnType<typeof usableGrants>>;
}

/** The pod as the agent sees it; any pod it is not installed in is a 404 (runtime/access). */
export async function podContext(deps: RuntimeDeps, agent: AgentPrincipal, podId: string): Promise<PodContext> {
  const pod = await podById(deps.db, podId);
  enforce(
    deps.policy.evaluate(decisions.runtimeAccess, {
      action: 'pod.context',
      caller: { agent_id: agent.agentId, pod_id: agent.podId },
      pod: pod ? { id: pod.id } : undefined,
    }),
  );
  if (!pod) throw new Error('runtime/access allowed the context of a pod that does not exist');
  const [self, members, grants] = await Promise.all([callingAgent(deps, agent), podMembers(deps.db, pod.id), usableGrants(deps, agent)]);
  return { pod, agent: self, members, grants };
}
