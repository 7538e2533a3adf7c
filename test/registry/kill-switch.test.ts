import { broker, connection, human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';
import { startService, type TestService } from '../support/service';
import { drain, poll } from '../support/events';

// Runtime stop as a kill switch, end to end: the broker check and attenuation see it on the very
// next request; the pod context shows the grants the agent can use.
let service: TestService;
let owner: Human;
let podId: string;
let agent: InstalledAgent;
let brokerAuth: { Authorization: string };
let grantId: string;
let connectionId: string;

const createGrant = async (extra: Record<string, unknown> = {}) =>
  (
    await service.http
      .post('/api/grants')
      .set(owner.auth)
      .send({ connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file', 'pulls.list'], ...extra })
      .expect(201)
  ).body as { id: string };

beforeAll(async () => {
  service = await startService();
  owner = human(service, 'owner');
  podId = await podWith(service, owner);
  agent = await installAgent(service, owner, podId, 'killable-bot');
  const registered = await broker(service);
  brokerAuth = registered.auth;
  connectionId = (await connection(service, owner, registered.id)).id;
  grantId = (await createGrant()).id;
});
afterAll(() => service.close());
beforeEach(() => drain(service, agent));

const check = () =>
  service.http
    .post('/api/broker/check')
    .set(brokerAuth)
    .send({ grantId, tool: 'repos.read_file', subjectToken: agent.token, args: { path: 'README.md' } })
    .expect(200);
const attenuate = () =>
  service.http
    .post(`/api/grants/${grantId}/attenuate`)
    .set(agent.auth)
    .send({ tools: ['pulls.list'] });
const runtime = (action: string) =>
  service.http.post(`/api/registry/pods/${podId}/agents/${agent.name}/${action}`).set(owner.auth).expect(200);

describe('the pod context lists the grants the agent can use now', () => {
  it('active grants whose effective audience has the agent; not revoked ones, not ones listing others', async () => {
    const revoked = await createGrant();
    await service.http.post(`/api/grants/${revoked.id}/revoke`).set(owner.auth).expect(200);
    const notForAgent = await createGrant({ audience: [owner.userId] });
    const res = await service.http.get(`/api/agents/runtime/pods/${podId}/context`).set(agent.auth).expect(200);
    const ids = res.body.grants.map((g: { id: string }) => g.id);
    expect(ids).toContain(grantId);
    expect(ids).not.toContain(revoked.id);
    expect(ids).not.toContain(notForAgent.id);
    expect(res.body.grants.find((g: { id: string }) => g.id === grantId)).toMatchObject({
      status: 'active',
      audience: expect.arrayContaining([agent.agentId, owner.userId]),
      tools: ['repos.read_file', 'pulls.list'],
    });
  });
});

describe('grant events reach the agent with the change', () => {
  it('grant.created and grant.revoked for a pod grant the agent can read', async () => {
    const grant = await createGrant();
    await service.http.post(`/api/grants/${grant.id}/revoke`).set(owner.auth).expect(200);
    const events = await poll(service, agent);
    expect(events.map((e) => e.type)).toEqual(['grant.created', 'grant.revoked']);
    expect((events[0]?.data.grant as { id: string }).id).toBe(grant.id);
    expect(events[1]?.data.grantId).toBe(grant.id);
  });
});

describe('runtime stop is a kill switch', () => {
  it('the broker denies runtime_stopped and attenuation answers 409 from the next request; start restores both', async () => {
    expect((await check()).body).toMatchObject({ decision: 'allow' });

    await runtime('runtime-stop');
    expect((await check()).body).toMatchObject({ decision: 'deny', reason: 'runtime_stopped' });
    const refused = await attenuate();
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('runtime_stopped');
    // The agent still learns of it by polling, and can ack.
    const [stopEvent] = await poll(service, agent);
    expect(stopEvent?.type).toBe('runtime.stop_requested');
    await service.http.post(`/api/agents/runtime/events/${stopEvent?.id}/ack`).set(agent.auth).expect(204);

    await runtime('runtime-start');
    expect((await check()).body).toMatchObject({ decision: 'allow' });
    expect((await attenuate()).status).toBe(201);
  });
});
