import type { TestService } from './service';
import { broker, connection, human, installAgent, podWith, type Human, type InstalledAgent } from './world';

/**
 * One pod for grant tests: an owner (who owns the connection), a human member, two installed
 * agents (`bot` and `helper`), an outsider, and a code-hosting connection with read and write
 * tools. Everything is made through the API.
 */
export interface GrantWorld {
  owner: Human;
  member: Human;
  outsider: Human;
  podId: string;
  bot: InstalledAgent;
  helper: InstalledAgent;
  brokerId: string;
  connectionId: string;
  installationId: string;
}

export async function grantWorld(service: TestService): Promise<GrantWorld> {
  const owner = human(service, 'owner');
  const member = human(service, 'member');
  const outsider = human(service, 'outsider');
  const podId = await podWith(service, owner, [{ who: member }]);
  const bot = await installAgent(service, owner, podId, 'bot');
  const helper = await installAgent(service, owner, podId, 'helper');
  const registered = await broker(service);
  const created = await connection(service, owner, registered.id);
  return {
    owner,
    member,
    outsider,
    podId,
    bot,
    helper,
    brokerId: registered.id,
    connectionId: created.id,
    installationId: created.installationId,
  };
}

export const podTarget = (world: GrantWorld) => ({ kind: 'pod', id: world.podId });
export const seatTarget = (agent: InstalledAgent) => ({ kind: 'seat', id: agent.agentId });

/** POST /api/grants as the owner, without asserting the outcome. */
export function postGrant(service: TestService, world: GrantWorld, body: Record<string, unknown>, as: Human = world.owner) {
  return service.http
    .post('/api/grants')
    .set(as.auth)
    .send({ connectionId: world.connectionId, target: podTarget(world), tools: ['repos.read_file'], ...body });
}

export function attenuate(service: TestService, agent: InstalledAgent, parentId: string, body: Record<string, unknown> = {}) {
  return service.http.post(`/api/grants/${parentId}/attenuate`).set(agent.auth).send(body);
}

export function inSeconds(seconds: number): string {
  return new Date(Date.now() + seconds * 1000).toISOString();
}
