import { iso } from '../kernel/schema';
import type { AgentRow, RuntimeTokenRow } from './repository';

export function presentRuntime(agent: AgentRow) {
  return {
    desiredState: agent.desired_state,
    state: agent.runtime_state,
    changedAt: iso(agent.runtime_changed_at),
    lastPolledAt: iso(agent.last_polled_at),
  };
}

export function presentAgent(agent: AgentRow) {
  return {
    podId: agent.pod_id,
    name: agent.name,
    agentId: agent.id,
    displayName: agent.display_name,
    description: agent.description,
    installedAt: iso(agent.installed_at),
    installedBy: agent.installed_by,
    runtime: presentRuntime(agent),
  };
}

export function presentRuntimeToken(token: RuntimeTokenRow) {
  return {
    id: token.id,
    name: token.name,
    createdAt: iso(token.created_at),
    expiresAt: iso(token.expires_at),
    lastUsedAt: iso(token.last_used_at),
  };
}
