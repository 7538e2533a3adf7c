import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { human, installAgent, podWith } from '../support/world';
import { attenuate, grantWorld, inSeconds, postGrant, seatTarget, type GrantWorld } from '../support/grant-world';

let service: TestService;
let world: GrantWorld;
/** A pod grant every test may narrow: three tools, write mode, 100 calls per minute, one day. */
let parent: { id: string; expiresAt: string };

beforeAll(async () => {
  service = await startService();
  world = await grantWorld(service);
  const res = await postGrant(service, world, {
    tools: ['repos.read_file', 'pulls.list', 'issues.create_comment'],
    writeMode: 'write',
    budget: { calls: 100, windowMs: 60_000 },
    expiresAt: inSeconds(86_400),
  }).expect(201);
  parent = res.body;
});
afterAll(() => service.close());

describe('POST /api/grants/:grantId/attenuate', () => {
  it('creates a narrower child linked to its parent and root; omitted fields inherit', async () => {
    const res = await attenuate(service, world.bot, parent.id, { tools: ['repos.read_file'], writeMode: 'read', budget: { calls: 10 } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      parentId: parent.id,
      rootId: parent.id,
      depth: 1,
      target: { kind: 'pod', id: world.podId },
      audienceMode: 'members',
      tools: ['repos.read_file'],
      writeMode: 'read',
      budget: { calls: 10, windowMs: 60_000 },
      expiresAt: parent.expiresAt,
      status: 'active',
      installationId: world.installationId,
      grantedBy: world.owner.userId,
    });
    const events = await service.deps.db('events').where({ type: 'grant.attenuated' }).whereRaw("data->'grant'->>'id' = ?", [res.body.id]);
    expect(events.map((e: { agent_id: string }) => e.agent_id).sort()).toEqual([world.bot.agentId, world.helper.agentId].sort());
  });

  it('narrows a pod grant to a seat of the pod in its audience; only that seat hears of it', async () => {
    const res = await attenuate(service, world.bot, parent.id, { target: seatTarget(world.helper), tools: ['pulls.list'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      target: { kind: 'seat', id: world.helper.agentId },
      audience: [world.helper.agentId],
      audienceMode: 'listed',
    });
    // The maker sees the child once, in the answer; afterwards a seat grant is for its seat.
    expectProblem(await service.http.get(`/api/grants/${res.body.id}`).set(world.bot.auth), 404, 'not_found');
    await service.http.get(`/api/grants/${res.body.id}`).set(world.helper.auth).expect(200);
    const events = await service.deps.db('events').where({ type: 'grant.attenuated' }).whereRaw("data->'grant'->>'id' = ?", [res.body.id]);
    expect(events.map((e: { agent_id: string }) => e.agent_id)).toEqual([world.helper.agentId]);
  });

  it('accepts a listed audience within the parent', async () => {
    const res = await attenuate(service, world.bot, parent.id, {
      audience: [world.bot.agentId, world.member.userId],
      tools: ['pulls.list'],
    });
    expect(res.status).toBe(201);
    expect(res.body.audience.sort()).toEqual([world.bot.agentId, world.member.userId].sort());
  });

  it.each([
    ['tools', { tools: ['repos.read_file', 'repos.delete'] }],
    ['budget.calls', { budget: { calls: 101 } }],
    ['budget.windowMs', { budget: { windowMs: 59_999 } }],
    ['expiresAt', { expiresAt: inSeconds(2 * 86_400) }],
  ])('422 grant_widening naming %s', async (field, body) => {
    const res = await attenuate(service, world.bot, parent.id, body);
    expectProblem(res, 422, 'grant_widening');
    expect(res.body.detail).toContain(field);
  });

  it('422 grant_widening naming writeMode under a read parent, and tools for a write tool under read', async () => {
    const readOnly = await attenuate(service, world.bot, parent.id, { tools: ['repos.read_file'], writeMode: 'read' }).expect(201);
    const wider = await attenuate(service, world.bot, readOnly.body.id, { writeMode: 'write' });
    expectProblem(wider, 422, 'grant_widening');
    expect(wider.body.detail).toContain('writeMode');
    const writeToolUnderRead = await attenuate(service, world.bot, parent.id, { writeMode: 'read' });
    expectProblem(writeToolUnderRead, 422, 'grant_widening');
    expect(writeToolUnderRead.body.detail).toContain('tools');
  });

  it('422 grant_widening naming audience: a member beyond a listed parent (omitting the audience inherits it)', async () => {
    const listed = await attenuate(service, world.bot, parent.id, { audience: [world.bot.agentId], tools: ['pulls.list'] }).expect(201);
    const everyone = await attenuate(service, world.bot, listed.body.id, {});
    expect(everyone.status).toBe(201); // inherits the listed audience: nothing widens
    const beyond = await attenuate(service, world.bot, listed.body.id, { audience: [world.bot.agentId, world.member.userId] });
    expectProblem(beyond, 422, 'grant_widening');
    expect(beyond.body.detail).toContain('audience');
  });

  it('422 grant_widening naming target: another pod, a pod from a seat, a seat outside the audience', async () => {
    const stranger = human(service, 'stranger');
    const otherPod = await podWith(service, stranger);
    const elsewhere = await attenuate(service, world.bot, parent.id, { target: { kind: 'pod', id: otherPod } });
    expectProblem(elsewhere, 422, 'grant_widening');
    expect(elsewhere.body.detail).toContain('target');
    const seat = await attenuate(service, world.bot, parent.id, { target: seatTarget(world.bot), tools: ['pulls.list'] }).expect(201);
    const backToPod = await attenuate(service, world.bot, seat.body.id, { target: { kind: 'pod', id: world.podId } });
    expectProblem(backToPod, 422, 'grant_widening');
    expect(backToPod.body.detail).toContain('target');
    const listed = await attenuate(service, world.bot, parent.id, { audience: [world.bot.agentId], tools: ['pulls.list'] }).expect(201);
    const outside = await attenuate(service, world.bot, listed.body.id, { target: seatTarget(world.helper) });
    expectProblem(outside, 422, 'grant_widening');
    expect(outside.body.detail).toContain('target');
  });

  it('422 audience_not_member: a listed identity that is no member', async () => {
    expectProblem(
      await attenuate(service, world.bot, parent.id, { audience: [world.bot.agentId, world.outsider.userId] }),
      422,
      'audience_not_member',
    );
  });

  it('422 expiry_out_of_range: an expiry in the past', async () => {
    expectProblem(await attenuate(service, world.bot, parent.id, { expiresAt: inSeconds(-5) }), 422, 'expiry_out_of_range');
  });

  it('400 server_derived_field and 400 invalid_request', async () => {
    expectProblem(await attenuate(service, world.bot, parent.id, { brokerId: world.brokerId }), 400, 'server_derived_field');
    expectProblem(await attenuate(service, world.bot, parent.id, { installationId: 'ins_x' }), 400, 'server_derived_field');
    expectProblem(await attenuate(service, world.bot, parent.id, { connectionId: world.connectionId }), 400, 'invalid_request');
    expectProblem(await attenuate(service, world.bot, parent.id, { writeMode: 'admin' }), 400, 'invalid_request');
  });

  it('403 credential_not_accepted for a human JWT, even the owner’s', async () => {
    const res = await service.http.post(`/api/grants/${parent.id}/attenuate`).set(world.owner.auth).send({});
    expectProblem(res, 403, 'credential_not_accepted');
  });

  it('404 for an agent that cannot read the parent: another pod, another seat’s grant, no such grant', async () => {
    const stranger = human(service, 'stranger');
    const otherPod = await podWith(service, stranger);
    const foreign = await installAgent(service, stranger, otherPod, 'foreign');
    expectProblem(await attenuate(service, foreign, parent.id, {}), 404, 'not_found');
    const helperSeat = await postGrant(service, world, { target: seatTarget(world.helper) }).expect(201);
    expectProblem(await attenuate(service, world.bot, helperSeat.body.id, {}), 404, 'not_found');
    expectProblem(await attenuate(service, world.bot, 'grt_01jd0000000000000000000000', {}), 404, 'not_found');
  });

  it('403 principal_not_in_audience: a reader outside the listed audience', async () => {
    const listed = await postGrant(service, world, { audience: [world.member.userId, world.helper.agentId] }).expect(201);
    expectProblem(await attenuate(service, world.bot, listed.body.id, {}), 403, 'principal_not_in_audience');
  });

  it('409 runtime_stopped: the calling agent’s runtime is stopped', async () => {
    const stopped = await installAgent(service, world.owner, world.podId, 'stopped-bot');
    await service.deps.db('agents').where({ id: stopped.agentId }).update({ desired_state: 'stopped' });
    expectProblem(await attenuate(service, stopped, parent.id, { tools: ['pulls.list'] }), 409, 'runtime_stopped');
  });

  it('422 grant_not_usable: a revoked parent, or a disconnected connection', async () => {
    const revoked = await postGrant(service, world, {}).expect(201);
    await service.http.post(`/api/grants/${revoked.body.id}/revoke`).set(world.owner.auth).expect(200);
    expectProblem(await attenuate(service, world.bot, revoked.body.id, {}), 422, 'grant_not_usable');

    const other = await postGrant(service, world, {}).expect(201);
    await service.deps.db('connections').where({ id: world.connectionId }).update({ status: 'disconnected' });
    try {
      expectProblem(await attenuate(service, world.bot, other.body.id, {}), 422, 'grant_not_usable');
    } finally {
      await service.deps.db('connections').where({ id: world.connectionId }).update({ status: 'connected' });
    }
  });

  it(`422 delegation_too_deep past MAX_DELEGATION_DEPTH`, async () => {
    const max = service.config.MAX_DELEGATION_DEPTH;
    let id = parent.id;
    for (let depth = 1; depth <= max; depth += 1) {
      const child = await attenuate(service, world.bot, id, { tools: ['repos.read_file'], writeMode: 'read' });
      expect({ depth, status: child.status }).toEqual({ depth, status: 201 });
      expect(child.body.depth).toBe(depth);
      id = child.body.id;
    }
    expectProblem(await attenuate(service, world.bot, id, {}), 422, 'delegation_too_deep');
  });
});
