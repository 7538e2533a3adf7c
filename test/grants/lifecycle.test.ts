import { ManualClock } from '../support/clock';
import { startedServiceWith } from '../support/service';
import { human, installAgent, podWith, type Human } from '../support/world';
import { attenuate, grantWorld, inSeconds, postGrant, seatTarget } from '../support/grant-world';

/** Time moves when the test says: an expiry is reached without sleeping. */
const clock = new ManualClock();
const { service, world } = startedServiceWith(grantWorld, { clock });

const read = (id: string, as: Human = world.owner) => service.http.get(`/api/grants/${id}`).set(as.auth).expect(200);

describe('the effective audience follows membership at read time', () => {
  it('drops a removed member from a members-mode and a listed pod grant at once', async () => {
    const leaving = human(service, 'leaving');
    await service.http
      .post(`/api/pods/${world.podId}/members`)
      .set(world.owner.auth)
      .send({ userId: leaving.userId, role: 'member' })
      .expect(201);
    const members = await postGrant(service, world, {}).expect(201);
    const listed = await postGrant(service, world, { audience: [leaving.userId, world.bot.agentId] }).expect(201);
    expect(members.body.audience).toContain(leaving.userId);
    expect(listed.body.audience.sort()).toEqual([leaving.userId, world.bot.agentId].sort());

    await service.http.delete(`/api/pods/${world.podId}/members/${leaving.userId}`).set(world.owner.auth).expect(204);
    expect((await read(members.body.id)).body.audience).not.toContain(leaving.userId);
    expect((await read(listed.body.id)).body.audience).toEqual([world.bot.agentId]);
    // The raw list is never shown, only what is effective now.
    expect(JSON.stringify((await read(listed.body.id)).body)).not.toContain(leaving.userId);
  });

  it('empties a seat grant’s audience when its agent is uninstalled; a new member joins a members-mode audience', async () => {
    const temp = await installAgent(service, world.owner, world.podId, 'temp');
    const seat = await postGrant(service, world, { target: seatTarget(temp) }).expect(201);
    const pod = await postGrant(service, world, {}).expect(201);
    const joiner = human(service, 'joiner');
    await service.http
      .post(`/api/pods/${world.podId}/members`)
      .set(world.owner.auth)
      .send({ userId: joiner.userId, role: 'member' })
      .expect(201);
    expect((await read(pod.body.id)).body.audience).toContain(joiner.userId);
    await service.http.delete(`/api/registry/pods/${world.podId}/agents/temp`).set(world.owner.auth).expect(204);
    expect((await read(seat.body.id)).body.audience).toEqual([]);
    expect((await read(pod.body.id)).body.audience).not.toContain(temp.agentId);
  });

  it('lets the connection owner read a grant after leaving the pod, but not list the pod', async () => {
    const coOwner = human(service, 'co-owner');
    const podId = await podWith(service, world.owner, [{ who: coOwner, role: 'owner' }]);
    const grant = await postGrant(service, world, { target: { kind: 'pod', id: podId } }).expect(201);
    await service.http.delete(`/api/pods/${podId}/members/${world.owner.userId}`).set(coOwner.auth).expect(204);
    expect((await read(grant.body.id)).body.audience).toEqual([coOwner.userId]);
    const list = await service.http.get(`/api/pods/${podId}/grants`).set(world.owner.auth);
    expect(list.status).toBe(404);
  });
});

describe('status is computed from the whole chain at read time', () => {
  it('an expiry reached while nobody writes anything turns the grant and its child expired', async () => {
    const root = await postGrant(service, world, { expiresAt: inSeconds(2) }).expect(201);
    const child = await attenuate(service, world.bot, root.body.id, {}).expect(201);
    expect(child.body.expiresAt).toBe(root.body.expiresAt);
    clock.advance(Date.parse(root.body.expiresAt) - clock.now() + 50);
    expect((await read(root.body.id)).body.status).toBe('expired');
    expect((await read(child.body.id)).body.status).toBe('expired');
    const res = await attenuate(service, world.bot, child.body.id, {});
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 422, code: 'grant_not_usable' });
  });

  it('a child whose own expiry is ahead is expired when an ancestor has expired', async () => {
    const root = await postGrant(service, world, {}).expect(201);
    const child = await attenuate(service, world.bot, root.body.id, { expiresAt: inSeconds(3600) }).expect(201);
    // Nothing in the API moves an expiry earlier; set the root's in the past to isolate the rule.
    await service.deps
      .db('grants')
      .where({ id: root.body.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const res = await read(child.body.id);
    expect(res.body).toMatchObject({ status: 'expired', expiresAt: child.body.expiresAt });
  });
});

describe('GET /api/pods/:podId/grants', () => {
  let podId: string;
  let made: string[];

  beforeAll(async () => {
    podId = await podWith(service, world.owner, [{ who: world.member }]);
    made = [];
    for (let i = 0; i < 5; i += 1) {
      made.push((await postGrant(service, world, { target: { kind: 'pod', id: podId } }).expect(201)).body.id);
    }
    await service.http.post(`/api/grants/${made[1]}/revoke`).set(world.owner.auth).expect(200);
  });

  it('pages newest first with an opaque cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `limit=2&cursor=${cursor}` : 'limit=2';
      const res = await service.http.get(`/api/pods/${podId}/grants?${query}`).set(world.member.auth).expect(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((g: { id: string }) => g.id));
      cursor = res.body.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...made].reverse());
  });

  it('filters by the status computed at read time', async () => {
    const revoked = await service.http.get(`/api/pods/${podId}/grants?status=revoked`).set(world.owner.auth).expect(200);
    expect(revoked.body.items.map((g: { id: string }) => g.id)).toEqual([made[1]]);
    const active = await service.http.get(`/api/pods/${podId}/grants?status=active&limit=3`).set(world.owner.auth).expect(200);
    expect(active.body.items.map((g: { id: string }) => g.id)).toEqual([made[4], made[3], made[2]]);
    expect(active.body.nextCursor).not.toBeNull();
    const rest = await service.http
      .get(`/api/pods/${podId}/grants?status=active&limit=3&cursor=${active.body.nextCursor}`)
      .set(world.owner.auth)
      .expect(200);
    expect(rest.body.items.map((g: { id: string }) => g.id)).toEqual([made[0]]);
    expect(rest.body.nextCursor).toBeNull();
  });

  it('refuses bad queries with 400 and hides unknown pods with 404', async () => {
    for (const query of ['status=paused', 'limit=0', 'limit=201', 'cursor=%%%']) {
      const res = await service.http.get(`/api/pods/${podId}/grants?${query}`).set(world.owner.auth);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
    }
    const unknown = await service.http.get('/api/pods/pod_01jd0000000000000000000000/grants').set(world.owner.auth);
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: 'not_found' });
  });
});
