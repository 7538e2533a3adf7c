import type { GrantsService, RuntimeDeps } from './deps';
import type { AgentPrincipal } from '../kernel/principals';

type GrantRecord = Awaited<ReturnType<GrantsService['listOfPod']>>['items'][number];

const PAGE_SIZE = 200;

/**
 * The grants this agent can use now: among the pod's grants it can read (the grants service asks
 * `grants/read`, which also computes status and effective audience), the active ones whose
 * effective audience contains the agent.
 */
export async function usableGrants(deps: RuntimeDeps, agent: AgentPrincipal): Promise<GrantRecord[]> {
  const usable: GrantRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await deps.grants.listOfPod(agent, agent.podId, { status: 'active', limit: PAGE_SIZE, cursor });
    usable.push(...page.items.filter((grant) => grant.audience.includes(agent.agentId)));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return usable;
}
