import { startedServiceWith } from '../support/service';
import { attenuate, grantWorld, postGrant, seatTarget } from '../support/grant-world';

const { service, world } = startedServiceWith(grantWorld);

const read = (id: string) => service.http.get(`/api/grants/${id}`).set(world.owner.auth).expect(200);
const revoke = (id: string, auth = world.owner.auth) => service.http.post(`/api/grants/${id}/revoke`).set(auth);

/** root (pod) → child (pod, fewer tools) → grandchild (the helper's seat). */
async function threeLevels() {
  const root = await postGrant(service, world, { tools: ['repos.read_file', 'pulls.list'] }).expect(201);
  const child = await attenuate(service, world.bot, root.body.id, { tools: ['pulls.list'] }).expect(201);
  const grandchild = await attenuate(service, world.bot, child.body.id, { target: seatTarget(world.helper) }).expect(201);
  return { root: root.body.id as string, child: child.body.id as string, grandchild: grandchild.body.id as string };
}

describe('revocation', () => {
  it('cascades from the root through a three-level chain with one timestamp', async () => {
    const tree = await threeLevels();
    const res = await revoke(tree.root).expect(200);
    expect(res.body).toMatchObject({ id: tree.root, status: 'revoked' });
    for (const id of [tree.child, tree.grandchild]) {
      const grant = await read(id);
      expect(grant.body).toMatchObject({ status: 'revoked', revokedAt: res.body.revokedAt });
    }
  });

  it('revokes a middle grant and its descendants only; the root stays active', async () => {
    const tree = await threeLevels();
    const res = await revoke(tree.child).expect(200);
    expect((await read(tree.grandchild)).body).toMatchObject({ status: 'revoked', revokedAt: res.body.revokedAt });
    expect((await read(tree.root)).body).toMatchObject({ status: 'active', revokedAt: null });
    // Revoking the root later keeps the earlier timestamp of what was already revoked.
    const later = await revoke(tree.root).expect(200);
    expect(later.body.revokedAt).not.toBeNull();
    expect((await read(tree.child)).body.revokedAt).toBe(res.body.revokedAt);
  });

  it('is a 200 no-op when repeated, and DELETE does the same', async () => {
    const first = await postGrant(service, world, {}).expect(201);
    const once = await revoke(first.body.id).expect(200);
    const twice = await revoke(first.body.id).expect(200);
    expect(twice.body).toEqual(once.body);
    const second = await postGrant(service, world, {}).expect(201);
    const deleted = await service.http.delete(`/api/grants/${second.body.id}`).set(world.owner.auth).expect(200);
    expect(deleted.body).toMatchObject({ id: second.body.id, status: 'revoked' });
    const again = await service.http.delete(`/api/grants/${second.body.id}`).set(world.owner.auth).expect(200);
    expect(again.body.revokedAt).toBe(deleted.body.revokedAt);
  });

  it('writes grant.revoked for the agents that can read each revoked grant, and invalidates the tree', async () => {
    const tree = await threeLevels();
    const version = () => service.deps.redis.get(`{${tree.root}}:ver`);
    await service.deps.redis.set(`{${tree.root}}:ver`, 'cached-before-revoke');
    await revoke(tree.root).expect(200);
    const stamped = await version();
    expect(stamped).not.toBe('cached-before-revoke');
    // A repeat changes no row but stamps the tree again: it re-confirms the revocation.
    await revoke(tree.root).expect(200);
    expect(await version()).not.toBe(stamped);
    const rows: Array<{ agent_id: string; grant_id: string }> = await service.deps
      .db('events')
      .where({ type: 'grant.revoked' })
      .whereRaw("data->>'rootId' = ?", [tree.root])
      .select('agent_id', service.deps.db.raw("data->>'grantId' as grant_id"));
    const byGrant = (id: string) =>
      rows
        .filter((r) => r.grant_id === id)
        .map((r) => r.agent_id)
        .sort();
    expect(byGrant(tree.root)).toEqual([world.bot.agentId, world.helper.agentId].sort());
    expect(byGrant(tree.grandchild)).toEqual([world.helper.agentId]);
  });

  it('403 not_connection_owner for a member who can read it; 404 for who cannot; 403 for an agent token', async () => {
    const pod = await postGrant(service, world, {}).expect(201);
    const seat = await postGrant(service, world, { target: seatTarget(world.bot) }).expect(201);
    const problem = (res: { status: number; body: { code: string } }) => ({ status: res.status, code: res.body.code });
    expect(problem(await revoke(pod.body.id, world.member.auth))).toEqual({ status: 403, code: 'not_connection_owner' });
    expect(problem(await service.http.delete(`/api/grants/${pod.body.id}`).set(world.member.auth))).toEqual({
      status: 403,
      code: 'not_connection_owner',
    });
    expect(problem(await revoke(seat.body.id, world.member.auth))).toEqual({ status: 404, code: 'not_found' });
    expect(problem(await revoke(pod.body.id, world.outsider.auth))).toEqual({ status: 404, code: 'not_found' });
    expect(problem(await revoke('grt_01jd0000000000000000000000'))).toEqual({ status: 404, code: 'not_found' });
    expect(problem(await revoke(pod.body.id, world.bot.auth))).toEqual({ status: 403, code: 'credential_not_accepted' });
    expect((await read(pod.body.id)).body.status).toBe('active');
  });

  it('never leaves an active child under a revoked parent when revoke races attenuation', async () => {
    const ROUNDS = 12;
    for (let round = 0; round < ROUNDS; round += 1) {
      const root = await postGrant(service, world, { tools: ['repos.read_file', 'pulls.list'] }).expect(201);
      const child = await attenuate(service, world.bot, root.body.id, { tools: ['pulls.list'] }).expect(201);
      const racers = [
        ...Array.from({ length: 3 }, () => attenuate(service, world.bot, root.body.id, { tools: ['repos.read_file'] })),
        ...Array.from({ length: 3 }, () => attenuate(service, world.helper, child.body.id, {})),
      ];
      // The revocation lands somewhere in the middle of the attenuations.
      racers.splice(round % racers.length, 0, revoke(root.body.id));
      const results = await Promise.all(racers);
      for (const res of results) {
        expect([200, 201, 422]).toContain(res.status);
        if (res.status === 422) expect(res.body.code).toBe('grant_not_usable');
      }
      const active = await service.deps
        .db('grants')
        .where({ root_id: root.body.id })
        .whereNull('revoked_at')
        .count<{ count: string }[]>('* as count');
      expect({ round, active: Number(active[0]?.count) }).toEqual({ round, active: 0 });
    }
  });
});
