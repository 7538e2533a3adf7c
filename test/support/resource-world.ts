import type { TestService } from './service';
import { broker, connection, human, installAgent, podWith, type Human, type InstalledAgent } from './world';

/** Tools whose resources sit in their arguments: at the top, nested, and none at all. */
export const RESOURCE_TOOLS = [
  { name: 'repos.read_file', access: 'read', resource: { repository: '/repository', ref: '/ref', path: '/path' } },
  { name: 'repos.push', access: 'write', resource: { repository: '/target/repository', ref: '/target/ref' } },
  { name: 'issues.create_comment', access: 'write' },
];

/**
 * An owner, a pod with an installed agent, a broker and a connection of RESOURCE_TOOLS: what a
 * test of resource-constrained grants needs, with its two requests (a grant, a check).
 */
export async function resourceWorld(service: TestService) {
  const owner: Human = human(service, 'owner');
  const podId = await podWith(service, owner, []);
  const agent: InstalledAgent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  const connectionId = (await connection(service, owner, brk.id, { tools: RESOURCE_TOOLS })).id as string;
  const createGrant = (body: Record<string, unknown>) =>
    service.http
      .post('/api/grants')
      .set(owner.auth)
      .send({ connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file'], ...body });
  const check = (grantId: string, tool: string, args: Record<string, unknown>) =>
    service.http.post('/api/broker/check').set(brk.auth).send({ grantId, tool, subjectToken: agent.token, args });
  return { owner, podId, agent, connectionId, brokerAuth: brk.auth, createGrant, check };
}
