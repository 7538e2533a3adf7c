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

beforeAll(async () => {
  service = await startService();
  ({ owner, admin, member, outsider, podId } = await podWithEveryRole(service));
  agent = await installAgent(service, owner, podId, 'switch-bot');
});
afterAll(() => service.close());
beforeEach(() => drain(service, agent));

const url = (what: string, name = agent.name) => `/api/registry/pods/${podId}/agents/${name}/${what}`;
const status = async () => (await service.http.get(url('runtime-status')).set(member.auth).expect(200)).body;
const stop = (who: Human = admin) => service.http.post(url('runtime-stop')).set(who.auth);
const start = (who: Human = admin) => service.http.post(url('runtime-start')).set(who.auth);

describe('runtime status, start and stop', () => {
  it('an installed agent is starting until it polls, then running', async () => {
    expect(await status()).toMatchObject({ desiredState: 'running', state: 'starting', lastPolledAt: null });
    await poll(service, agent);
    const after = await status();
    expect(after).toMatchObject({ desiredState: 'running', state: 'running', lastPolledAt: expect.stringMatching(/Z$/) });
    const installations = await service.http.get('/api/agents/runtime/installations').set(agent.auth).expect(200);
    expect(installations.body.items[0].runtime).toEqual(after);
  });

  it('stop is immediate, announced once, idempotent, and invalidates the broker cache on every replica', async () => {
    const touch = jest.spyOn(service.deps.invalidation, 'record');
    try {
      const stopped = await stop().expect(200);
      expect(stopped.body).toMatchObject({ desiredState: 'stopped', state: 'stopped' });
      expect(touch).toHaveBeenCalledWith(expect.anything(), 'agent', agent.agentId);
      const again = await stop(owner).expect(200);
      expect(again.body).toEqual(stopped.body); // nothing changed, not even changedAt
      expect(await status()).toEqual(stopped.body);
    } finally {
      touch.mockRestore();
    }
    // The stopped agent still authenticates, polls (without turning itself back on) and acks.
    const events = await poll(service, agent);
    expect(events.map((e) => e.type)).toEqual(['runtime.stop_requested']);
    expect(events[0]?.data).toEqual({
      agentId: agent.agentId,
      name: agent.name,
      desiredState: 'stopped',
      state: 'stopped',
      requestedBy: admin.userId,
    });
    await service.http.post(`/api/agents/runtime/events/${events[0]?.id}/ack`).set(agent.auth).expect(204);
    expect(await status()).toMatchObject({ desiredState: 'stopped', state: 'stopped', lastPolledAt: expect.any(String) });
  });

  it('start after stop is starting until the next poll, announced once, idempotent', async () => {
    await stop().expect(200);
    await drain(service, agent);
    const started = await start().expect(200);
    expect(started.body).toMatchObject({ desiredState: 'running', state: 'starting' });
    expect((await start(owner).expect(200)).body).toEqual(started.body);
    const events = await poll(service, agent);
    expect(events.map((e) => [e.type, e.data.desiredState, e.data.state])).toEqual([['runtime.start_requested', 'running', 'starting']]);
    expect(await status()).toMatchObject({ desiredState: 'running', state: 'running' });
  });

  it('takes no body', async () => {
    const res = await stop().send({ force: true });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
  });
});

describe('runtime permissions', () => {
  it('members read; a plain member may not start or stop (403 not_pod_admin)', async () => {
    for (const action of [stop, start]) {
      const res = await action(member);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('not_pod_admin');
    }
    expect((await status()).desiredState).toBe('running');
  });

  it('an outsider sees nothing (404), nor does anyone see an unknown agent', async () => {
    for (const res of [
      await service.http.get(url('runtime-status')).set(outsider.auth),
      await stop(outsider),
      await start(outsider),
      await service.http.post(url('runtime-stop', 'nobody')).set(owner.auth),
      await service.http.get(url('runtime-status', 'nobody')).set(member.auth),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect(await poll(service, agent)).toEqual([]);
  });

  it('an agent token is not a registry credential (403 credential_not_accepted)', async () => {
    const res = await service.http.post(url('runtime-start')).set(agent.auth);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('credential_not_accepted');
  });
});
