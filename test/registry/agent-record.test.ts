import { installAgent, podWithEveryRole, type Human, type InstalledAgent } from '../support/world';
import { startService, type TestService } from '../support/service';
import { drain, poll } from '../support/events';

let service: TestService;
let owner: Human;
let admin: Human;
let member: Human;
let outsider: Human;
let podId: string;
let agent: InstalledAgent;
let neighbour: InstalledAgent;

beforeAll(async () => {
  service = await startService();
  ({ owner, admin, member, outsider, podId } = await podWithEveryRole(service));
  agent = await installAgent(service, owner, podId, 'record-bot');
  neighbour = await installAgent(service, owner, podId, 'neighbour-bot');
});
afterAll(() => service.close());
beforeEach(async () => {
  await drain(service, agent);
  await drain(service, neighbour);
});

const path = () => `/api/registry/pods/${podId}/agents/${agent.name}`;

describe('GET /api/registry/pods/:podId/agents/:name', () => {
  it('shows the record to every pod member', async () => {
    for (const who of [owner, admin, member]) {
      const res = await service.http.get(path()).set(who.auth).expect(200);
      expect(res.body).toEqual({
        podId,
        name: agent.name,
        agentId: agent.agentId,
        displayName: null,
        description: null,
        installedAt: expect.stringMatching(/Z$/),
        installedBy: owner.userId,
        runtime: { desiredState: 'running', state: 'starting', changedAt: expect.stringMatching(/Z$/), lastPolledAt: null },
      });
    }
  });

  it('hides the pod and its agents from outsiders, and unknown agents from members (404)', async () => {
    for (const [who, url] of [
      [outsider, path()],
      [member, `/api/registry/pods/${podId}/agents/nobody`],
      [owner, '/api/registry/pods/pod_01jd0000000000000000000000/agents/record-bot'],
    ] as const) {
      const res = await service.http.get(url).set(who.auth);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it('takes a human JWT only', async () => {
    const res = await service.http.get(path()).set(agent.auth);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('credential_not_accepted');
    expect((await service.http.get(path())).status).toBe(401);
  });
});

describe('PATCH /api/registry/pods/:podId/agents/:name', () => {
  it('lets owners and admins change displayName and description, telling only that agent', async () => {
    const res = await service.http
      .patch(path())
      .set(admin.auth)
      .send({ displayName: 'Record bot', description: 'Keeps records' })
      .expect(200);
    expect(res.body).toMatchObject({ displayName: 'Record bot', description: 'Keeps records', agentId: agent.agentId });
    const events = await poll(service, agent);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'agent.updated',
      podId,
      data: {
        agentId: agent.agentId,
        name: agent.name,
        displayName: 'Record bot',
        description: 'Keeps records',
        changed: ['displayName', 'description'],
        updatedBy: admin.userId,
      },
    });
    expect(await poll(service, neighbour)).toEqual([]);
    const read = await service.http.get(path()).set(member.auth).expect(200);
    expect(read.body.displayName).toBe('Record bot');
  });

  it('changes and announces nothing when the values are already current; null clears a field', async () => {
    await service.http.patch(path()).set(owner.auth).send({ displayName: 'Same' }).expect(200);
    await drain(service, agent);
    await service.http.patch(path()).set(owner.auth).send({ displayName: 'Same' }).expect(200);
    await service.http.patch(path()).set(owner.auth).send({}).expect(200);
    expect(await poll(service, agent)).toEqual([]);
    const cleared = await service.http.patch(path()).set(owner.auth).send({ displayName: null }).expect(200);
    expect(cleared.body.displayName).toBeNull();
    expect((await poll(service, agent)).map((e) => e.data.changed)).toEqual([['displayName']]);
  });

  it('refuses unknown fields, wrong types and a missing body (400/415), changing nothing', async () => {
    const before = (await service.http.get(path()).set(owner.auth)).body;
    for (const body of [{ name: 'renamed' }, { runtime: { desiredState: 'stopped' } }, { displayName: 7 }, { displayName: '' }]) {
      const res = await service.http.patch(path()).set(owner.auth).send(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
    expect((await service.http.patch(path()).set(owner.auth)).status).toBe(415);
    expect((await service.http.get(path()).set(owner.auth)).body).toEqual(before);
    expect(await poll(service, agent)).toEqual([]);
  });

  it('refuses a plain member (403 not_pod_admin) and an outsider (404)', async () => {
    const asMember = await service.http.patch(path()).set(member.auth).send({ description: 'x' });
    expect(asMember.status).toBe(403);
    expect(asMember.body.code).toBe('not_pod_admin');
    const asOutsider = await service.http.patch(path()).set(outsider.auth).send({ description: 'x' });
    expect(asOutsider.status).toBe(404);
    expect(await poll(service, agent)).toEqual([]);
  });
});
