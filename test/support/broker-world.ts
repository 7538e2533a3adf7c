import type { TestService } from './service';
import { broker, connection, human, installAgent, podWith, rootGrant, attenuateGrant, type Human, type InstalledAgent } from './world';

/**
 * A pod with an owner, a human member and an installed agent, a registered broker and a
 * code-hosting connection of the owner's: everything a broker check needs, made through the API.
 */
export async function brokerWorld(service: TestService) {
  const owner = human(service, 'owner');
  const member = human(service, 'member');
  const podId = await podWith(service, owner, [{ who: member }]);
  const agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  const conn = await connection(service, owner, brk.id);
  return { owner, member, podId, agent, broker: brk, connectionId: conn.id };
}

export type BrokerWorld = Awaited<ReturnType<typeof brokerWorld>>;

/** A root pod grant and a chain of `depth` children below it, each made by the agent. */
export async function chainOf(service: TestService, world: BrokerWorld, depth: number, options: Record<string, unknown> = {}) {
  const root = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, options);
  const ids = [root.id];
  for (let i = 0; i < depth; i += 1) ids.push((await attenuateGrant(service, world.agent, ids.at(-1)!)).id);
  return { rootId: root.id, leafId: ids.at(-1)!, ids };
}

export function checkAs(
  service: Pick<TestService, 'http'>,
  world: { broker: { auth: { Authorization: string } } },
  grantId: string,
  who: Human | InstalledAgent,
  extra: Record<string, unknown> = {},
) {
  return service.http
    .post('/api/broker/check')
    .set(world.broker.auth)
    .send({ grantId, tool: 'repos.read_file', subjectToken: who.token, args: { path: 'README.md' }, ...extra });
}
