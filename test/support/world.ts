import { registerBroker } from '../../src/admin/brokers';
import { bearer, humanToken, newUserId, type TestService } from './service';

export interface Human {
  userId: string;
  token: string;
  auth: { Authorization: string };
}

export interface InstalledAgent {
  name: string;
  agentId: string;
  token: string;
  tokenId: string;
  auth: { Authorization: string };
}

export function human(service: TestService, label = 'user'): Human {
  const userId = newUserId(label);
  const token = humanToken(service.config, userId);
  return { userId, token, auth: bearer(token) };
}

/** A pod owned by `owner`, with the given humans added as members (all through the API). */
export async function podWith(service: TestService, owner: Human, members: Array<{ who: Human; role?: string }> = []) {
  const created = await service.http.post('/api/pods').set(owner.auth).send({ name: 'Test pod' }).expect(201);
  for (const { who, role } of members) {
    await service.http
      .post(`/api/pods/${created.body.id}/members`)
      .set(owner.auth)
      .send({ userId: who.userId, role: role ?? 'member' })
      .expect(201);
  }
  return created.body.id as string;
}

export async function installAgent(service: TestService, admin: Human, podId: string, name = 'bot'): Promise<InstalledAgent> {
  const agent = await service.http.post(`/api/registry/pods/${podId}/agents`).set(admin.auth).send({ name }).expect(201);
  const token = await service.http
    .post(`/api/registry/pods/${podId}/agents/${name}/runtime-tokens`)
    .set(admin.auth)
    .send({ name: 'test' })
    .expect(201);
  return { name, agentId: agent.body.agentId, token: token.body.token, tokenId: token.body.id, auth: bearer(token.body.token) };
}

export async function broker(service: TestService, name = 'test-broker') {
  const registered = await registerBroker(service.deps.db, name);
  return { ...registered, auth: bearer(registered.token) };
}

export const TOOLS = [
  { name: 'repos.read_file', access: 'read' },
  { name: 'pulls.list', access: 'read' },
  { name: 'issues.create_comment', access: 'write' },
];

export async function connection(
  service: TestService,
  owner: Human,
  brokerId: string,
  options: { kind?: string; tools?: Array<{ name: string; access: string }> } = {},
) {
  const res = await service.http
    .post('/api/connections')
    .set(owner.auth)
    .send({
      kind: options.kind ?? 'code_hosting_app',
      brokerId,
      externalInstallationId: `ext-${Date.now()}`,
      tools: options.tools ?? TOOLS,
    })
    .expect(201);
  return res.body as { id: string; installationId: string };
}

/** A root grant made through the API by the connection owner (POST /api/grants). */
export async function rootGrant(
  service: TestService,
  owner: Human,
  connectionId: string,
  target: { kind: string; id: string },
  options: Record<string, unknown> = {},
) {
  const res = await service.http
    .post('/api/grants')
    .set(owner.auth)
    .send({ connectionId, target, tools: ['repos.read_file', 'pulls.list'], ...options });
  if (res.status !== 201) throw new Error(`grant creation answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as { id: string; rootId: string };
}

/** A child grant made through the API by an installed agent (POST /api/grants/:id/attenuate). */
export async function attenuateGrant(service: TestService, agent: InstalledAgent, parentId: string, options: Record<string, unknown> = {}) {
  const res = await service.http.post(`/api/grants/${parentId}/attenuate`).set(agent.auth).send(options);
  if (res.status !== 201) throw new Error(`attenuation answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as { id: string; rootId: string; parentId: string };
}

export interface PodCast {
  owner: Human;
  admin: Human;
  member: Human;
  outsider: Human;
  podId: string;
}

/** A pod with a human of every role, and an outsider: the cast of every permission test. */
export async function podWithEveryRole(service: TestService): Promise<PodCast> {
  const owner = human(service, 'owner');
  const admin = human(service, 'admin');
  const member = human(service, 'member');
  const outsider = human(service, 'outsider');
  const podId = await podWith(service, owner, [{ who: admin, role: 'admin' }, { who: member }]);
  return { owner, admin, member, outsider, podId };
}
