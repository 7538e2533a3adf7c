import { attenuate, grantWorld, postGrant, type GrantWorld } from '../support/grant-world';
import { bearer, startService, type TestService } from '../support/service';
import { broker, human } from '../support/world';

/**
 * The two reads the console added to the API: a grant's budget use and subtree
 * (GET /api/grants/:id/usage, whoever may read the grant) and a pod's agents
 * (GET /api/registry/pods/:podId/agents, pod members). Others: 404.
 */
let service: TestService;
let world: GrantWorld;
let brokerAuth: { Authorization: string };

beforeAll(async () => {
  service = await startService();
  world = await grantWorld(service);
  // The grant world's connection belongs to its own broker: checks go through that one.
  const registered = await broker(service, 'reads-broker');
  const connection = await service.http
    .post('/api/connections')
    .set(world.owner.auth)
    .send({
      kind: 'code_hosting_app',
      brokerId: registered.id,
      externalInstallationId: `reads-${Date.now()}`,
      tools: [{ name: 'repos.read_file', access: 'read' }],
    })
    .expect(201);
  world = { ...world, connectionId: connection.body.id, brokerId: registered.id };
  brokerAuth = registered.auth;
});
afterAll(() => service.close());

const check = (grantId: string) =>
  service.http
    .post('/api/broker/check')
    .set(brokerAuth)
    .send({ grantId, tool: 'repos.read_file', subjectToken: world.bot.token, args: {} });

describe('GET /api/grants/:grantId/usage', () => {
  it('counts allowed calls through the grant and below it, and the grants a revocation would take', async () => {
    const root = (await postGrant(service, world, { budget: { calls: 5, windowMs: 60_000 } }).expect(201)).body;
    const child = (await attenuate(service, world.bot, root.id).expect(201)).body;
    const grandchild = (await attenuate(service, world.bot, child.id).expect(201)).body;
    const revokedChild = (await attenuate(service, world.bot, root.id).expect(201)).body;
    await service.http.post(`/api/grants/${revokedChild.id}/revoke`).set(world.owner.auth).expect(200);
    expect((await check(child.id)).body.decision).toBe('allow');
    expect((await check(grandchild.id)).body.decision).toBe('allow');
    expect((await check(root.id)).body.decision).toBe('allow');

    const usage = await service.http.get(`/api/grants/${root.id}/usage`).set(world.owner.auth).expect(200);
    expect(usage.body).toEqual({
      grantId: root.id,
      calls: 5,
      windowMs: 60_000,
      since: expect.any(String),
      used: 3,
      remaining: 2,
      descendants: 3,
      liveDescendants: 2,
    });
    const below = await service.http.get(`/api/grants/${grandchild.id}/usage`).set(world.owner.auth).expect(200);
    expect(below.body).toMatchObject({ used: 1, descendants: 0, liveDescendants: 0 });
    // A member who can read the grant reads its use too; the installed agent as well.
    await service.http.get(`/api/grants/${root.id}/usage`).set(world.member.auth).expect(200);
    await service.http.get(`/api/grants/${root.id}/usage`).set(world.bot.auth).expect(200);
  });

  it('is a 404 for another tenant, an unknown id and a hostile one, and a 401 without a credential', async () => {
    const root = (await postGrant(service, world, {}).expect(201)).body;
    const stranger = human(service, 'stranger');
    for (const [id, who] of [
      [root.id, stranger],
      [root.id, world.outsider],
      ['grt_01jd0000000000000000000000', world.owner],
      ['..%2f..%2fetc', world.owner],
    ] as const) {
      const answer = await service.http.get(`/api/grants/${id}/usage`).set(who.auth);
      expect({ id, status: answer.status, code: answer.body.code }).toEqual({ id, status: 404, code: 'not_found' });
    }
    await service.http.get(`/api/grants/${root.id}/usage`).expect(401);
    await service.http.get(`/api/grants/${root.id}/usage`).set(brokerAuth).expect(403);
  });
});

describe('GET /api/registry/pods/:podId/agents', () => {
  it("lists the pod's agents by name with their runtime, in pages, for members", async () => {
    await service.http.post(`/api/registry/pods/${world.podId}/agents/bot/runtime-stop`).set(world.owner.auth).expect(200);
    const all = await service.http.get(`/api/registry/pods/${world.podId}/agents`).set(world.member.auth).expect(200);
    expect(all.body.items.map((a: { name: string }) => a.name)).toEqual(['bot', 'helper']);
    expect(all.body.items[0]).toMatchObject({
      name: 'bot',
      agentId: world.bot.agentId,
      runtime: { desiredState: 'stopped', state: 'stopped' },
    });
    expect(all.body.nextCursor).toBeNull();
    const first = await service.http.get(`/api/registry/pods/${world.podId}/agents?limit=1`).set(world.owner.auth).expect(200);
    expect(first.body).toMatchObject({ items: [{ name: 'bot' }], nextCursor: 'bot' });
    const second = await service.http.get(`/api/registry/pods/${world.podId}/agents?limit=1&cursor=bot`).set(world.owner.auth).expect(200);
    expect(second.body).toMatchObject({ items: [{ name: 'helper' }], nextCursor: null });
    await service.http.post(`/api/registry/pods/${world.podId}/agents/bot/runtime-start`).set(world.owner.auth).expect(200);
  });

  it('is a 404 for a non-member, a 400 for a bad page, and never lists for an agent', async () => {
    const answer = await service.http.get(`/api/registry/pods/${world.podId}/agents`).set(world.outsider.auth);
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 404, code: 'not_found' });
    for (const query of ['limit=0', 'limit=201', 'limit=1e999', 'cursor=%3Cimg%3E', 'cursor=']) {
      const refused = await service.http.get(`/api/registry/pods/${world.podId}/agents?${query}`).set(world.owner.auth);
      expect({ query, status: refused.status }).toEqual({ query, status: 400 });
    }
    const asAgent = await service.http.get(`/api/registry/pods/${world.podId}/agents`).set(bearer(world.bot.token));
    expect(asAgent.status).toBe(403);
  });
});
