import { ManualClock } from '../support/clock';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { attenuateGrant, human, rootGrant, type Human } from '../support/world';

/**
 * CONTRACT §9, "what the caller may decide": `GET /api/approvals?state=pending` leaves out the
 * caller's own calls and anything waiting on a grant that can no longer be used, and a revoke
 * ends its grants' pending and approved approvals in its own transaction (they read `expired`).
 */
let service: TestService;
let world: BrokerWorld;
let admin: Human;
const clock = new ManualClock();
const WRITE = { tool: 'issues.create_comment', args: { issue: 7, body: 'LGTM' } };

beforeAll(async () => {
  service = await startService({}, { clock });
  world = await brokerWorld(service);
  admin = human(service, 'admin');
  await service.http
    .post(`/api/pods/${world.podId}/members`)
    .set(world.owner.auth)
    .send({ userId: admin.userId, role: 'admin' })
    .expect(201);
});
afterAll(() => service.close());

async function approveModeGrant(extra: Record<string, unknown> = {}): Promise<string> {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve', ...extra },
  );
  return grant.id;
}

/** A new approval each time: a call of its own (an identical call would find the open one, CONTRACT §17). */
let asked = 0;
async function askApproval(grantId: string, who: BrokerWorld['agent'] | Human = world.agent): Promise<string> {
  asked += 1;
  const res = await checkAs(service, world, grantId, who, { ...WRITE, args: { ...WRITE.args, body: `LGTM ${asked}` } });
  expect(res.body).toMatchObject({ decision: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });
  return res.body.approvalId as string;
}

async function pendingFor(who: Human): Promise<string[]> {
  const res = await service.http.get('/api/approvals').query({ state: 'pending' }).set(who.auth);
  expect(res.status).toBe(200);
  return res.body.items.map((a: { id: string }) => a.id);
}

const approval = (id: string, who: Human = world.owner) => service.http.get(`/api/approvals/${id}`).set(who.auth);

describe('the pending list holds what the caller may decide', () => {
  it("leaves out the caller's own calls, which another decider sees", async () => {
    const grantId = await approveModeGrant();
    const own = await askApproval(grantId, world.owner);
    const agents = await askApproval(grantId);

    const ownerSees = await pendingFor(world.owner);
    expect(ownerSees).toContain(agents);
    expect(ownerSees).not.toContain(own);
    expect(await pendingFor(admin)).toEqual(expect.arrayContaining([own, agents]));
    // Reading one's own call's approval by id is still fine; deciding it is not.
    expect((await approval(own)).body).toMatchObject({ id: own, state: 'pending' });
    expectProblem(await service.http.post(`/api/approvals/${own}/approve`).set(world.owner.auth).send({}), 403, 'self_approval');
    expect((await service.http.post(`/api/approvals/${own}/approve`).set(admin.auth).send({})).body.state).toBe('approved');
  });

  it('leaves out an approval whose grant expired meanwhile', async () => {
    const grantId = await approveModeGrant({ expiresAt: new Date(clock.now() + 60_000).toISOString() });
    const id = await askApproval(grantId);
    expect(await pendingFor(world.owner)).toContain(id);
    clock.advance(60_001);
    try {
      expect(await pendingFor(world.owner)).not.toContain(id);
      expect(await pendingFor(admin)).not.toContain(id);
      expectProblem(await service.http.post(`/api/approvals/${id}/approve`).set(world.owner.auth).send({}), 422, 'grant_not_usable');
    } finally {
      clock.advance(-60_001);
    }
  });
});

describe('a revoke ends its grants’ approvals', () => {
  it('in its transaction: pending and approved ones read expired, leave the list, and decide nothing', async () => {
    const rootId = await approveModeGrant();
    const childId = (await attenuateGrant(service, world.agent, rootId)).id;
    const pending = await askApproval(rootId);
    const approved = await askApproval(rootId);
    const denied = await askApproval(rootId);
    const onChild = await askApproval(childId);
    await service.http.post(`/api/approvals/${approved}/approve`).set(world.owner.auth).send({ note: 'ok' }).expect(200);
    await service.http.post(`/api/approvals/${denied}/deny`).set(world.owner.auth).send({ note: 'no' }).expect(200);
    expect(await pendingFor(world.owner)).toEqual(expect.arrayContaining([pending, onChild]));

    const revoke = await service.http.post(`/api/grants/${rootId}/revoke`).set(world.owner.auth).expect(200);
    const revokedAt = revoke.body.revokedAt as string;

    const listed = await pendingFor(world.owner);
    expect(listed).not.toContain(pending);
    expect(listed).not.toContain(onChild);
    expect(await pendingFor(admin)).not.toContain(pending);
    for (const id of [pending, onChild]) {
      expect((await approval(id)).body).toMatchObject({
        state: 'expired',
        expiresAt: revokedAt,
        decidedAt: revokedAt,
        decidedBy: null,
        note: 'grant revoked',
      });
    }
    // The approved one keeps who approved it and why; its time ended with the grant.
    expect((await approval(approved)).body).toMatchObject({
      state: 'expired',
      expiresAt: revokedAt,
      decidedBy: world.owner.userId,
      note: 'ok',
    });
    // A decided one is history and stays as it was.
    expect((await approval(denied)).body).toMatchObject({ state: 'denied', decidedBy: world.owner.userId, note: 'no' });

    const expired = await service.http.get('/api/approvals').query({ state: 'expired' }).set(world.owner.auth);
    expect(expired.body.items.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining([pending, approved, onChild]));
    const stillApproved = await service.http.get('/api/approvals').query({ state: 'approved' }).set(world.owner.auth);
    expect(stillApproved.body.items.map((a: { id: string }) => a.id)).not.toContain(approved);

    expectProblem(await service.http.post(`/api/approvals/${pending}/approve`).set(world.owner.auth).send({}), 422, 'grant_not_usable');
    const waited = await service.http.get(`/api/broker/approvals/${onChild}`).query({ waitMs: 5000 }).set(world.broker.auth);
    expect(waited.body.state).toBe('expired');
    const resent = await checkAs(service, world, rootId, world.agent, { ...WRITE, approvalId: approved });
    expect(resent.body).toMatchObject({ decision: 'deny', reason: 'revoked' });
  });
});
