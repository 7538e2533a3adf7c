import { human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';
import { startService, type TestService } from '../support/service';

let service: TestService;
let owner: Human;
let member: Human;
let podId: string;
let otherPodId: string;
let agent: InstalledAgent;

beforeAll(async () => {
  service = await startService();
  owner = human(service, 'owner');
  member = human(service, 'member');
  podId = await podWith(service, owner, [{ who: member }]);
  otherPodId = await podWith(service, human(service, 'stranger'));
  agent = await installAgent(service, owner, podId, 'runtime-bot');
});
afterAll(() => service.close());

describe('GET /api/agents/runtime/installations and /pods', () => {
  it('lists the calling agent’s one installation', async () => {
    const res = await service.http.get('/api/agents/runtime/installations').set(agent.auth).expect(200);
    expect(res.body).toEqual({
      items: [
        {
          podId,
          name: agent.name,
          agentId: agent.agentId,
          installedAt: expect.stringMatching(/Z$/),
          runtime: { desiredState: 'running', state: expect.any(String), changedAt: expect.any(String), lastPolledAt: null },
        },
      ],
      nextCursor: null,
    });
  });

  it('lists the pod it is installed in, and no other', async () => {
    const res = await service.http.get('/api/agents/runtime/pods').set(agent.auth).expect(200);
    expect(res.body).toEqual({ items: [{ id: podId, name: 'Test pod' }], nextCursor: null });
  });

  it('takes only an agent runtime token', async () => {
    for (const path of ['/api/agents/runtime/installations', '/api/agents/runtime/pods', `/api/agents/runtime/pods/${podId}/context`]) {
      const asHuman = await service.http.get(path).set(owner.auth);
      expect(asHuman.status).toBe(403);
      expect(asHuman.body.code).toBe('credential_not_accepted');
      const anonymous = await service.http.get(path);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });
});

describe('GET /api/agents/runtime/pods/:podId/context', () => {
  it('shows the pod, the agent itself, every member and the grants it can use', async () => {
    const res = await service.http.get(`/api/agents/runtime/pods/${podId}/context`).set(agent.auth).expect(200);
    expect(res.body.pod).toMatchObject({ id: podId, name: 'Test pod', createdBy: owner.userId });
    expect(res.body.agent).toMatchObject({ podId, name: agent.name, agentId: agent.agentId, installedBy: owner.userId });
    expect(res.body.members.map((m: { memberId: string; kind: string; role: string }) => [m.memberId, m.kind, m.role])).toEqual([
      [owner.userId, 'human', 'owner'],
      [member.userId, 'human', 'member'],
      [agent.agentId, 'agent', 'member'],
    ]);
    expect(Array.isArray(res.body.grants)).toBe(true);
  });

  it('is a 404 for a pod the agent is not installed in, or one that does not exist', async () => {
    for (const id of [otherPodId, 'pod_01jd0000000000000000000000', 'junk']) {
      const res = await service.http.get(`/api/agents/runtime/pods/${id}/context`).set(agent.auth);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });
});

describe('an uninstalled agent', () => {
  it('is refused everywhere with 401, at once', async () => {
    const doomed = await installAgent(service, owner, podId, 'doomed-bot');
    await service.http.get('/api/agents/runtime/pods').set(doomed.auth).expect(200);
    await service.http.delete(`/api/registry/pods/${podId}/agents/${doomed.name}`).set(owner.auth).expect(204);
    for (const req of [
      service.http.get('/api/agents/runtime/installations'),
      service.http.get('/api/agents/runtime/pods'),
      service.http.get(`/api/agents/runtime/pods/${podId}/context`),
      service.http.get('/api/agents/runtime/events'),
      service.http.post('/api/agents/runtime/events/evt_01jd0000000000000000000000/ack'),
    ]) {
      const res = await req.set(doomed.auth);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthenticated');
    }
  });

  it('a deleted runtime token is refused the very next request', async () => {
    const spare = await installAgent(service, owner, podId, 'spare-bot');
    await service.http
      .delete(`/api/registry/pods/${podId}/agents/${spare.name}/runtime-tokens/${spare.tokenId}`)
      .set(owner.auth)
      .expect(204);
    expect((await service.http.get('/api/agents/runtime/events').set(spare.auth)).status).toBe(401);
  });
});
