import { startedServiceWith } from '../support/service';
import { expectProblem } from '../support/problems';
import { connection, human, installAgent, podWith } from '../support/world';
import { grantWorld, inSeconds, postGrant, seatTarget } from '../support/grant-world';

const { service, world } = startedServiceWith(grantWorld);

const DAY = 86_400_000;

describe('POST /api/grants: a root grant', () => {
  it('creates a pod grant with the CONTRACT defaults and exactly the record fields', async () => {
    const before = Date.now();
    const res = await postGrant(service, world, { tools: ['repos.read_file', 'pulls.list'] });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'id',
        'parentId',
        'rootId',
        'depth',
        'target',
        'audience',
        'audienceMode',
        'tools',
        'writeMode',
        'budget',
        'expiresAt',
        'createdAt',
        'resources',
        'revokedAt',
        'status',
        'installationId',
        'grantedBy',
        'oauthClient',
      ].sort(),
    );
    expect(res.body).toMatchObject({
      parentId: null,
      rootId: res.body.id,
      depth: 0,
      target: { kind: 'pod', id: world.podId },
      audienceMode: 'members',
      tools: ['repos.read_file', 'pulls.list'],
      writeMode: 'read',
      budget: { calls: 1000, windowMs: 3_600_000 },
      revokedAt: null,
      // Made through the API, not by a consent: no OAuth client on it.
      oauthClient: null,
      status: 'active',
      installationId: world.installationId,
      grantedBy: world.owner.userId,
    });
    expect(res.body.id).toMatch(/^grt_/);
    expect(res.body.audience.sort()).toEqual([world.owner.userId, world.member.userId, world.bot.agentId, world.helper.agentId].sort());
    const expires = Date.parse(res.body.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 30 * DAY);
    expect(expires).toBeLessThanOrEqual(Date.now() + 30 * DAY);
    expect(res.body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(world.connectionId);
    expect(text).not.toContain(world.brokerId);
  });

  it('creates a seat grant whose audience is the seat, with given limits', async () => {
    const expiresAt = inSeconds(3600);
    const res = await postGrant(service, world, {
      target: seatTarget(world.bot),
      tools: ['issues.create_comment'],
      writeMode: 'write',
      budget: { calls: 5, windowMs: 60_000 },
      expiresAt,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      target: { kind: 'seat', id: world.bot.agentId },
      audience: [world.bot.agentId],
      audienceMode: 'listed',
      writeMode: 'write',
      budget: { calls: 5, windowMs: 60_000 },
      expiresAt,
    });
  });

  it('keeps a listed audience of current members', async () => {
    const res = await postGrant(service, world, { audience: [world.member.userId, world.bot.agentId] });
    expect(res.status).toBe(201);
    expect(res.body.audienceMode).toBe('listed');
    expect(res.body.audience.sort()).toEqual([world.member.userId, world.bot.agentId].sort());
  });

  it('writes grant.created for the agents that can read it, in the same transaction', async () => {
    const pod = await postGrant(service, world, {});
    const seat = await postGrant(service, world, { target: seatTarget(world.bot) });
    const recipients = async (grantId: string) =>
      (await service.deps.db('events').where({ type: 'grant.created' }).whereRaw("data->'grant'->>'id' = ?", [grantId]).select('agent_id'))
        .map((row: { agent_id: string }) => row.agent_id)
        .sort();
    expect(await recipients(pod.body.id)).toEqual([world.bot.agentId, world.helper.agentId].sort());
    expect(await recipients(seat.body.id)).toEqual([world.bot.agentId]);
  });
});

describe('POST /api/grants: every refusal of spec §7.1 with its code', () => {
  // A connection is visible to its owner alone: someone else's is not found, like an unknown one.
  it('404 not_found: a member uses the owner’s connection, answered as an unknown one is', async () => {
    const foreign = await postGrant(service, world, {}, world.member);
    expectProblem(foreign, 404, 'not_found');
    const unknown = await postGrant(service, world, { connectionId: 'con_01jd0000000000000000000000' }, world.member);
    expect(foreign.body).toEqual({ ...unknown.body, instance: foreign.body.instance });
  });

  it('does not tell a non-owner anything else about the connection', async () => {
    const res = await postGrant(service, world, { tools: ['no.such_tool'], target: { kind: 'team', id: 'x' } }, world.member);
    expectProblem(res, 404, 'not_found');
    expect(res.body.reasons).toBeUndefined();
  });

  it('404 not_found: an unknown connection', async () => {
    expectProblem(await postGrant(service, world, { connectionId: 'con_01jd0000000000000000000000' }), 404, 'not_found');
  });

  it('400 server_derived_field: installationId or brokerId supplied, before any other validation', async () => {
    const withInstallation = await postGrant(service, world, { installationId: world.installationId });
    expectProblem(withInstallation, 400, 'server_derived_field');
    expect(withInstallation.body.errors).toEqual([{ path: 'body.installationId', message: expect.any(String) }]);
    expectProblem(await postGrant(service, world, { brokerId: world.brokerId }), 400, 'server_derived_field');
    expectProblem(await postGrant(service, world, { brokerId: world.brokerId, colour: 'red', tools: 7 }), 400, 'server_derived_field');
  });

  it('400 invalid_request: unknown fields, wrong types, bad writeMode or budget', async () => {
    expectProblem(await postGrant(service, world, { colour: 'red' }), 400, 'invalid_request');
    expectProblem(await postGrant(service, world, { writeMode: 'admin' }), 400, 'invalid_request');
    expectProblem(await postGrant(service, world, { budget: { calls: 0 } }), 400, 'invalid_request');
    expectProblem(await postGrant(service, world, { tools: [] }), 400, 'invalid_request');
    expectProblem(await postGrant(service, world, { expiresAt: 'tomorrow' }), 400, 'invalid_request');
  });

  it('422 connection_kind_not_allowed: a connection of another kind', async () => {
    const other = await connection(service, world.owner, world.brokerId, { kind: 'chat_app' });
    expectProblem(await postGrant(service, world, { connectionId: other.id }), 422, 'connection_kind_not_allowed');
  });

  it('422 connection_disconnected: a disconnected connection backs no new grant', async () => {
    const other = await connection(service, world.owner, world.brokerId);
    await service.http.patch(`/api/connections/${other.id}`).set(world.owner.auth).send({ status: 'disconnected' }).expect(200);
    expectProblem(await postGrant(service, world, { connectionId: other.id }), 422, 'connection_disconnected');
  });

  it('422 target_not_allowed: a pod the owner is not a member of', async () => {
    const stranger = human(service, 'stranger');
    const theirPod = await podWith(service, stranger);
    expectProblem(await postGrant(service, world, { target: { kind: 'pod', id: theirPod } }), 422, 'target_not_allowed');
    expectProblem(
      await postGrant(service, world, { target: { kind: 'pod', id: 'pod_01jd0000000000000000000000' } }),
      422,
      'target_not_allowed',
    );
  });

  it('422 target_not_allowed: a seat not installed in a pod of the owner, or no seat at all', async () => {
    const stranger = human(service, 'stranger');
    const theirPod = await podWith(service, stranger);
    const theirAgent = await installAgent(service, stranger, theirPod, 'theirs');
    expectProblem(await postGrant(service, world, { target: seatTarget(theirAgent) }), 422, 'target_not_allowed');
    expectProblem(
      await postGrant(service, world, { target: { kind: 'seat', id: 'agt_01jd0000000000000000000000' } }),
      422,
      'target_not_allowed',
    );
    expectProblem(await postGrant(service, world, { target: { kind: 'seat', id: world.member.userId } }), 422, 'target_not_allowed');
  });

  it('422 target_not_allowed: an unknown target kind', async () => {
    expectProblem(await postGrant(service, world, { target: { kind: 'team', id: world.podId } }), 422, 'target_not_allowed');
  });

  it('422 audience_not_member: a listed identity that is not a current member', async () => {
    expectProblem(await postGrant(service, world, { audience: [world.member.userId, world.outsider.userId] }), 422, 'audience_not_member');
    expectProblem(
      await postGrant(service, world, { target: seatTarget(world.bot), audience: [world.bot.agentId, world.member.userId] }),
      422,
      'audience_not_member',
    );
  });

  it('422 tool_not_enabled: a tool the connection does not enable', async () => {
    expectProblem(await postGrant(service, world, { tools: ['repos.read_file', 'repos.delete'] }), 422, 'tool_not_enabled');
  });

  it('422 grant_widening: a write tool under writeMode read (the default)', async () => {
    expectProblem(await postGrant(service, world, { tools: ['issues.create_comment'] }), 422, 'grant_widening');
    expectProblem(await postGrant(service, world, { tools: ['issues.create_comment'], writeMode: 'read' }), 422, 'grant_widening');
  });

  it('422 expiry_out_of_range: expiresAt in the past or more than 365 days away', async () => {
    expectProblem(await postGrant(service, world, { expiresAt: inSeconds(-1) }), 422, 'expiry_out_of_range');
    expectProblem(
      await postGrant(service, world, { expiresAt: new Date(Date.now() + 366 * DAY).toISOString() }),
      422,
      'expiry_out_of_range',
    );
  });

  it('lists every reason when several hold; the code is the first by status', async () => {
    const res = await postGrant(service, world, { tools: ['repos.delete'], audience: [world.outsider.userId] });
    expectProblem(res, 422, 'audience_not_member');
    expect(res.body.reasons).toEqual(['audience_not_member', 'tool_not_enabled']);
  });

  it('403 credential_not_accepted for an agent token; 401 without a credential', async () => {
    expectProblem(await postGrant(service, world, {}, { ...world.owner, auth: world.bot.auth }), 403, 'credential_not_accepted');
    const res = await service.http.post('/api/grants').send({});
    expectProblem(res, 401, 'unauthenticated');
  });
});

describe('the OpenAPI document', () => {
  it('covers the seven grant operations with their error codes', async () => {
    const doc = (await service.http.get('/api/openapi.json').expect(200)).body;
    const ops: Array<[string, string, string[]]> = [
      ['/api/pods/{podId}/grants', 'get', ['not_found']],
      [
        '/api/grants',
        'post',
        [
          'server_derived_field',
          'resource_pattern_invalid',
          'target_not_allowed',
          'audience_not_member',
          'tool_not_enabled',
          'grant_widening',
        ],
      ],
      ['/api/grants/{grantId}', 'get', ['not_found']],
      ['/api/grants/{grantId}/calls', 'get', ['not_found']],
      [
        '/api/grants/{grantId}/attenuate',
        'post',
        ['grant_widening', 'grant_not_usable', 'delegation_too_deep', 'runtime_stopped', 'credential_not_accepted'],
      ],
      ['/api/grants/{grantId}/revoke', 'post', ['not_connection_owner', 'not_found']],
      ['/api/grants/{grantId}', 'delete', ['not_connection_owner', 'not_found']],
    ];
    for (const [path, method, codes] of ops) {
      const operation = doc.paths[path]?.[method];
      expect({ path, method, documented: Boolean(operation) }).toEqual({ path, method, documented: true });
      const described = JSON.stringify(operation.responses);
      for (const code of codes)
        expect({ path, method, code, found: described.includes(`\`${code}\``) }).toEqual({ path, method, code, found: true });
    }
    expect(doc.info.description).toContain('principal_not_in_audience');
  });
});
