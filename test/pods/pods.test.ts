import { startedService } from '../support/service';
import { expectProblem } from '../support/problems';
import { human, podWith, type Human } from '../support/world';

/** Pods and members (CONTRACT §3): members read, owners and admins manage, outsiders see nothing. */
const service = startedService();

async function memberIds(podId: string, reader: Human): Promise<Record<string, string>> {
  const res = await service.http.get(`/api/pods/${podId}/members`).set(reader.auth).expect(200);
  expect(res.body.nextCursor).toBeNull();
  return Object.fromEntries(res.body.items.map((m: { memberId: string; role: string }) => [m.memberId, m.role]));
}

function addMember(podId: string, by: Human, userId: string, role: string) {
  return service.http.post(`/api/pods/${podId}/members`).set(by.auth).send({ userId, role });
}

function removeMember(podId: string, by: Human, userId: string) {
  return service.http.delete(`/api/pods/${podId}/members/${encodeURIComponent(userId)}`).set(by.auth);
}

describe('POST /api/pods and GET /api/pods/:podId', () => {
  it('creates a pod whose creator is its owner member', async () => {
    const owner = human(service, 'owner');
    const res = await service.http.post('/api/pods').set(owner.auth).send({ name: '  Research  ' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^pod_[0-7][0-9a-z]{25}$/),
      name: 'Research',
      createdBy: owner.userId,
      createdAt: expect.any(String),
    });
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    expect(await memberIds(res.body.id, owner)).toEqual({ [owner.userId]: 'owner' });
  });

  it('refuses a pod without a name or with unknown fields (400)', async () => {
    const owner = human(service, 'owner');
    expectProblem(await service.http.post('/api/pods').set(owner.auth).send({ name: '   ' }), 400, 'invalid_request');
    expectProblem(await service.http.post('/api/pods').set(owner.auth).send({ name: 'x', ownerId: 'someone' }), 400, 'invalid_request');
  });

  it('lets any member read the pod and its members', async () => {
    const owner = human(service, 'owner');
    const member = human(service, 'member');
    const podId = await podWith(service, owner, [{ who: member }]);
    const res = await service.http.get(`/api/pods/${podId}`).set(member.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: podId, name: 'Test pod', createdBy: owner.userId });
    expect(await memberIds(podId, member)).toEqual({ [owner.userId]: 'owner', [member.userId]: 'member' });
  });

  it('refuses a query parameter the route does not take (400, as the OpenAPI decisions say)', async () => {
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    const res = await service.http.get(`/api/pods/${podId}?expand=members`).set(owner.auth);
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([{ path: 'query', message: expect.stringContaining('expand') }]);
  });

  it('answers an outsider 404, exactly like a pod that does not exist', async () => {
    const owner = human(service, 'owner');
    const outsider = human(service, 'outsider');
    const podId = await podWith(service, owner);
    const hidden = await service.http.get(`/api/pods/${podId}`).set(outsider.auth);
    const missing = await service.http.get('/api/pods/pod_01jd0000000000000000000000').set(outsider.auth);
    expectProblem(hidden, 404, 'not_found');
    expectProblem(missing, 404, 'not_found');
    expect(hidden.body.detail).toBe(missing.body.detail);
    expectProblem(await service.http.get(`/api/pods/${podId}/members`).set(outsider.auth), 404, 'not_found');
  });
});

describe('POST /api/pods/:podId/members', () => {
  let owner: Human;
  let admin: Human;
  let member: Human;
  let podId: string;

  beforeAll(async () => {
    owner = human(service, 'owner');
    admin = human(service, 'admin');
    member = human(service, 'member');
    podId = await podWith(service, owner, [{ who: admin, role: 'admin' }, { who: member }]);
  });

  it('lets the owner add a member of any role', async () => {
    const newcomer = human(service, 'new');
    const res = await addMember(podId, owner, newcomer.userId, 'admin');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      podId,
      memberId: newcomer.userId,
      kind: 'human',
      role: 'admin',
      addedBy: owner.userId,
      addedAt: expect.any(String),
    });
    const coOwner = human(service, 'co-owner');
    expect((await addMember(podId, owner, coOwner.userId, 'owner')).status).toBe(201);
    expect((await memberIds(podId, member))[coOwner.userId]).toBe('owner');
  });

  it('lets an admin add members and admins', async () => {
    expect((await addMember(podId, admin, human(service, 'by-admin').userId, 'member')).status).toBe(201);
    expect((await addMember(podId, admin, human(service, 'admin-by-admin').userId, 'admin')).status).toBe(201);
  });

  it('refuses a plain member (403 not_pod_admin)', async () => {
    const res = await addMember(podId, member, human(service, 'x').userId, 'member');
    expectProblem(res, 403, 'not_pod_admin');
  });

  it('refuses an admin adding an owner (403 owner_role_required)', async () => {
    const candidate = human(service, 'would-be-owner');
    expectProblem(await addMember(podId, admin, candidate.userId, 'owner'), 403, 'owner_role_required');
    expect(await memberIds(podId, owner)).not.toHaveProperty(candidate.userId);
  });

  it('refuses adding a current member again (409 member_exists), role unchanged', async () => {
    expectProblem(await addMember(podId, owner, member.userId, 'admin'), 409, 'member_exists');
    expect((await memberIds(podId, owner))[member.userId]).toBe('member');
  });

  it('answers an outsider 404 and never adds anyone', async () => {
    const outsider = human(service, 'outsider');
    expectProblem(await addMember(podId, outsider, outsider.userId, 'owner'), 404, 'not_found');
    expect(await memberIds(podId, owner)).not.toHaveProperty(outsider.userId);
  });

  it('refuses a service id as a human user id, an unknown role and unknown fields (400)', async () => {
    expectProblem(await addMember(podId, owner, 'agt_01jd0000000000000000000000', 'member'), 400, 'invalid_request');
    expectProblem(await addMember(podId, owner, 'carol', 'superuser'), 400, 'invalid_request');
    const extra = await service.http
      .post(`/api/pods/${podId}/members`)
      .set(owner.auth)
      .send({ userId: 'carol', role: 'member', kind: 'agent' });
    expectProblem(extra, 400, 'invalid_request');
  });
});

describe('DELETE /api/pods/:podId/members/:userId', () => {
  it('lets the owner and admins remove members; the member is gone at once', async () => {
    const owner = human(service, 'owner');
    const admin = human(service, 'admin');
    const a = human(service, 'a');
    const b = human(service, 'b');
    const podId = await podWith(service, owner, [{ who: admin, role: 'admin' }, { who: a }, { who: b }]);
    expect((await removeMember(podId, owner, a.userId)).status).toBe(204);
    expect((await removeMember(podId, admin, b.userId)).status).toBe(204);
    expect(Object.keys(await memberIds(podId, owner)).sort()).toEqual([admin.userId, owner.userId].sort());
    expectProblem(await service.http.get(`/api/pods/${podId}`).set(a.auth), 404, 'not_found');
  });

  it('refuses a plain member (403), an admin removing an owner (403) and an outsider (404)', async () => {
    const owner = human(service, 'owner');
    const coOwner = human(service, 'co-owner');
    const admin = human(service, 'admin');
    const member = human(service, 'member');
    const outsider = human(service, 'outsider');
    const podId = await podWith(service, owner, [{ who: coOwner, role: 'owner' }, { who: admin, role: 'admin' }, { who: member }]);
    expectProblem(await removeMember(podId, member, admin.userId), 403, 'not_pod_admin');
    expectProblem(await removeMember(podId, admin, coOwner.userId), 403, 'owner_role_required');
    expectProblem(await removeMember(podId, outsider, member.userId), 404, 'not_found');
    expect(Object.keys(await memberIds(podId, owner))).toHaveLength(4);
  });

  it('keeps the last owner (409 last_owner) but lets one of two owners go', async () => {
    const owner = human(service, 'owner');
    const coOwner = human(service, 'co-owner');
    const podId = await podWith(service, owner, [{ who: coOwner, role: 'owner' }]);
    expect((await removeMember(podId, coOwner, owner.userId)).status).toBe(204);
    expectProblem(await removeMember(podId, coOwner, coOwner.userId), 409, 'last_owner');
    expect(await memberIds(podId, coOwner)).toEqual({ [coOwner.userId]: 'owner' });
  });

  it('answers 404 for someone who is not a member', async () => {
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    expectProblem(await removeMember(podId, owner, 'nobody-here'), 404, 'not_found');
  });

  it('does not remove an installed agent through the human-member endpoint (404)', async () => {
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    const agent = await service.http.post(`/api/registry/pods/${podId}/agents`).set(owner.auth).send({ name: 'seat' }).expect(201);
    expectProblem(await removeMember(podId, owner, agent.body.agentId), 404, 'not_found');
    expect((await memberIds(podId, owner))[agent.body.agentId]).toBe('member');
  });
});
