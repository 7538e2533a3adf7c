import type { Deps } from '../deps';
import type { AgentPrincipal } from '../http/auth';
import { listPodGrants } from '../grants/read';

type GrantRecord = Awaited<ReturnType<typeof listPodGrants>>['items'][number];

const PAGE_SIZE = 200;

/**
 * The grants this agent can use now: among the pod's grants it can read (the grants service asks
 * `grants/read`, which also computes status and effective audience), the active ones whose
 * effective audience contains the agent.
 */
export async function usableGrants(deps: Deps, agent: AgentPrincipal): Promise<GrantRecord[]> {
  const usable: GrantRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPodGrants(deps, agent, agent.podId, { status: 'active', limit: PAGE_SIZE, cursor });
    usable.push(...page.items.filter((grant) => grant.audience.includes(agent.agentId)));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return usable;
}
