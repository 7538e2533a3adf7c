import { startService, type TestService } from '../support/service';
import { human } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';

let a: TestService;
let b: TestService;
let world: BrokerWorld;

// Replica A serves the checks (and caches); every change goes through replica B, so only the
// version keys in Redis can tell A that its cached facts are out of date.
beforeAll(async () => {
  a = await startService();
  b = await startService();
  world = await brokerWorld(b);
});
afterAll(async () => {
  await a.close();
  await b.close();
});

async function allowTwice(w: BrokerWorld, grantId: string, who: Parameters<typeof checkAs>[3]) {
  for (let i = 0; i < 2; i += 1) expect((await checkAs(a, w, grantId, who)).body.decision).toBe('allow');
}

describe('a change on one replica is effective on the very next check on another', () => {
  it('revocation', async () => {
    const { rootId, leafId } = await chainOf(b, world, 2);
    await allowTwice(world, leafId, world.agent);
    await b.http.delete(`/api/grants/${rootId}`).set(world.owner.auth).expect(200);
    expect((await checkAs(a, world, leafId, world.agent)).body.reason).toBe('revoked');
  });

  it('a removed member', async () => {
    const { rootId } = await chainOf(b, world, 0);
    const local = await brokerWorld(b);
    const grant = await chainOf(b, local, 0);
    await allowTwice(local, grant.rootId, local.member);
    await b.http.delete(`/api/pods/${local.podId}/members/${local.member.userId}`).set(local.owner.auth).expect(204);
    const res = await checkAs(a, local, grant.rootId, local.member);
    expect(res.body.reason).toBe('principal_not_in_audience');
    // Other trees are untouched.
    await allowTwice(world, rootId, world.member);
  });

  it('a member added after a denied check is let in at once', async () => {
    const local = await brokerWorld(b);
    const { rootId } = await chainOf(b, local, 0);
    const newcomer = human(b, 'newcomer');
    expect((await checkAs(a, local, rootId, newcomer)).body.reason).toBe('principal_not_in_audience');
    await b.http
      .post(`/api/pods/${local.podId}/members`)
      .set(local.owner.auth)
      .send({ userId: newcomer.userId, role: 'member' })
      .expect(201);
    expect((await checkAs(a, local, rootId, newcomer)).body.decision).toBe('allow');
  });

  it('a stopped runtime, and a start again', async () => {
    const local = await brokerWorld(b);
    const { leafId } = await chainOf(b, local, 1);
    await allowTwice(local, leafId, local.agent);
    const runtime = `/api/registry/pods/${local.podId}/agents/${local.agent.name}`;
    await b.http.post(`${runtime}/runtime-stop`).set(local.owner.auth).expect(200);
    expect((await checkAs(a, local, leafId, local.agent)).body.reason).toBe('runtime_stopped');
    await b.http.post(`${runtime}/runtime-start`).set(local.owner.auth).expect(200);
    expect((await checkAs(a, local, leafId, local.agent)).body.decision).toBe('allow');
  });

  it('a deleted runtime token', async () => {
    const local = await brokerWorld(b);
    const { rootId } = await chainOf(b, local, 0);
    await allowTwice(local, rootId, local.agent);
    await b.http
      .delete(`/api/registry/pods/${local.podId}/agents/${local.agent.name}/runtime-tokens/${local.agent.tokenId}`)
      .set(local.owner.auth)
      .expect(204);
    const res = await checkAs(a, local, rootId, local.agent);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('subject_token_invalid');
  });

  it('a disconnected connection', async () => {
    const local = await brokerWorld(b);
    const { rootId } = await chainOf(b, local, 0);
    await allowTwice(local, rootId, local.agent);
    await b.http.patch(`/api/connections/${local.connectionId}`).set(local.owner.auth).send({ status: 'disconnected' }).expect(200);
    expect((await checkAs(a, local, rootId, local.agent)).body.reason).toBe('connection_disconnected');
  });

  it('a Redis restart (simulated: the version key is gone) makes the replica reload', async () => {
    const local = await brokerWorld(b);
    const { rootId } = await chainOf(b, local, 0);
    await allowTwice(local, rootId, local.member);
    // Remove the member behind the service's back, then lose the version key as a restart would.
    await b.deps.db('pod_members').where({ pod_id: local.podId, member_id: local.member.userId }).delete();
    await b.deps.redis.del(`{${rootId}}:ver`);
    expect((await checkAs(a, local, rootId, local.member)).body.reason).toBe('principal_not_in_audience');
  });
});
