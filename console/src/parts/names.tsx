import { useEffect, useState } from 'react';
import type { Api } from '../session';
import { CopyId } from './CopyId';
import { VisibleText } from './ArgsTree';
import { Link } from './Link';

type GrantShape = { id: string; target: { kind: string; id: string }; tools: string[] };

// Read once per page load: a grant's target and tools never change, and names rarely do.
const grants = new Map<string, Promise<GrantShape>>();
const agentsOfPod = new Map<string, Promise<Map<string, string>>>();
const podNames = new Map<string, Promise<Map<string, string>>>();

function once<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  let found = cache.get(key);
  if (!found) {
    found = load();
    found.catch(() => cache.delete(key));
    cache.set(key, found);
  }
  return found;
}

function useAsync<T>(load: () => Promise<T> | null, keys: unknown[]): T | undefined {
  const [value, setValue] = useState<T>();
  useEffect(() => {
    let live = true;
    load()?.then(
      (loaded) => live && setValue(loaded),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, keys);
  return value;
}

/** A pod's agents by id (their display name, else their name). */
export function agentNames(api: Api, podId: string): Promise<Map<string, string>> {
  return once(agentsOfPod, podId, async () => {
    const page = await api.unwrap(api.api.GET('/api/registry/pods/{podId}/agents', { params: { path: { podId }, query: { limit: 200 } } }));
    return new Map(page.items.map((agent) => [agent.agentId, agent.displayName ?? agent.name]));
  });
}

/** The viewer's pods by id. */
function viewerPods(api: Api): Promise<Map<string, string>> {
  return once(podNames, 'mine', async () => {
    const page = await api.unwrap(api.api.GET('/api/pods', { params: { query: { limit: 200 } } }));
    return new Map(page.items.map((pod) => [pod.id, pod.name]));
  });
}

/** The agents of every pod of the viewer's (a seat's grant does not say its pod). */
async function allAgentNames(api: Api): Promise<Map<string, string>> {
  const pods = await viewerPods(api);
  const each = await Promise.all([...pods.keys()].map((podId) => agentNames(api, podId).catch(() => new Map<string, string>())));
  return new Map(each.flatMap((names) => [...names]));
}

export function useAllAgentNames(api: Api): Map<string, string> {
  return useAsync(() => allAgentNames(api), [api]) ?? new Map();
}

export function useAgentNames(api: Api, podId: string | null | undefined): Map<string, string> {
  return useAsync(() => (podId ? agentNames(api, podId) : null), [api, podId]) ?? new Map();
}

/** A grant by what it is: its tools and its target by name. */
export function grantTitle(grant: Pick<GrantShape, 'target' | 'tools'>, names: { pod?: string; agents: Map<string, string> }): string {
  const target =
    grant.target.kind === 'pod' ? `pod ${names.pod ?? grant.target.id}` : `seat of ${names.agents.get(grant.target.id) ?? grant.target.id}`;
  return `${grant.tools.join(', ')} · ${target}`;
}

/** A grant named by its tools and target, linked to its call trail, its id one click away. */
export function GrantName({ api, grantId }: { api: Api; grantId: string }) {
  const grant = useAsync(
    () => once(grants, grantId, () => api.unwrap(api.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } }))),
    [api, grantId],
  );
  const pods = useAsync(() => viewerPods(api), [api]);
  const agents = useAsync(() => (grant?.target.kind === 'seat' ? allAgentNames(api) : null), [api, grant]) ?? new Map<string, string>();
  const title = grant ? grantTitle(grant, { pod: pods?.get(grant.target.id), agents }) : grantId;
  return (
    <span className="named">
      <Link to={`/grants/${encodeURIComponent(grantId)}/calls`}>{title}</Link> <CopyId id={grantId} />
    </span>
  );
}

/** Who made a call or asked an approval: an agent by its name, a person by their user id. */
export function PrincipalName({ principal, agents }: { principal: { kind: string; id: string }; agents: Map<string, string> }) {
  const name = principal.kind === 'agent' ? agents.get(principal.id) : principal.id;
  return (
    <span className="named">
      <span>
        {principal.kind === 'agent' ? 'agent ' : 'person '}
        <VisibleText text={name ?? principal.id} />
      </span>{' '}
      {(principal.kind === 'agent' || name !== principal.id) && <CopyId id={principal.id} />}
    </span>
  );
}
