import { startService, type TestService } from '../support/service';
import { expectProblem } from '../support/problems';
import { broker, connection, human, installAgent, podWith, TOOLS, type Human } from '../support/world';

/** Connections (CONTRACT §3): created and owned by a human, visible to that owner and no one else. */
let service: TestService;
let brokerId: string;

beforeAll(async () => {
  service = await startService();
  brokerId = (await broker(service, 'connections-broker')).id;
});
afterAll(() => service.close());

function createBody(overrides: Record<string, unknown> = {}) {
  return { kind: 'code_hosting_app', brokerId, externalInstallationId: 'gh-12345', tools: TOOLS, ...overrides };
}

describe('POST /api/connections', () => {
  it('creates a connected connection owned by the caller, with its tools', async () => {
    const owner = human(service, 'owner');
    const res = await service.http.post('/api/connections').set(owner.auth).send(createBody());
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^con_/),
      kind: 'code_hosting_app',
      status: 'connected',
      ownerId: owner.userId,
      brokerId,
      installationId: expect.stringMatching(/^ins_/),
      externalInstallationId: 'gh-12345',
      app: null,
      tools: [...TOOLS].sort((a, b) => a.name.localeCompare(b.name)),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('stores other kinds too (grant creation is what refuses them)', async () => {
    const owner = human(service, 'owner');
    const res = await service.http
      .post('/api/connections')
      .set(owner.auth)
      .send(createBody({ kind: 'chat_app' }));
    expect(res.status).toBe(201);
    expect(res.body.kind).toBe('chat_app');
  });

  it('refuses an unknown broker (400 naming body.brokerId)', async () => {
    const owner = human(service, 'owner');
    const res = await service.http
      .post('/api/connections')
      .set(owner.auth)
      .send(createBody({ brokerId: 'brk_01jd0000000000000000000000' }));
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([{ path: 'body.brokerId', message: 'unknown broker' }]);
  });

  it.each([
    ['an unknown field', { installationId: 'ins_01jd0000000000000000000000' }],
    ['a tool access that is neither read nor write', { tools: [{ name: 'x', access: 'admin' }] }],
    ['a tool with an unknown field', { tools: [{ name: 'x', access: 'read', secret: 's' }] }],
    [
      'duplicate tool names',
      {
        tools: [
          { name: 'x', access: 'read' },
          { name: 'x', access: 'write' },
        ],
      },
    ],
    ['no tools', { tools: [] }],
    ['a status (connections start connected)', { status: 'disconnected' }],
    // GitHub installation permissions, by the names and levels of GitHub's own description.
    ['a permission GitHub does not know', { tools: [{ name: 'x', access: 'write', permissions: { root: 'write' } }] }],
    ['a permission named with another case', { tools: [{ name: 'x', access: 'write', permissions: { Contents: 'read' } }] }],
    ['a level GitHub does not grant that permission at', { tools: [{ name: 'x', access: 'write', permissions: { workflows: 'read' } }] }],
    ['a level GitHub does not know', { tools: [{ name: 'x', access: 'write', permissions: { contents: 'owner' } }] }],
    ['a read tool whose token could write', { tools: [{ name: 'x', access: 'read', permissions: { contents: 'write' } }] }],
    ['an empty permission set', { tools: [{ name: 'x', access: 'read', permissions: {} }] }],
    ['a permission key that is an object prototype name', { tools: [{ name: 'x', access: 'read', permissions: { constructor: 'read' } }] }],
    ['an app installation id that is not digits', { app: 'acme', externalInstallationId: '12/../34' }],
    ['an app name that is empty', { app: '' }],
  ])('refuses %s (400)', async (_label, overrides) => {
    const owner = human(service, 'owner');
    expectProblem(await service.http.post('/api/connections').set(owner.auth).send(createBody(overrides)), 400, 'invalid_request');
  });

  it('keeps the permissions a tool declares, and shows them back', async () => {
    const owner = human(service, 'owner');
    const tools = [
      { name: 'a.read', access: 'read', permissions: { contents: 'read', pull_requests: 'read' } },
      { name: 'b.write', access: 'write', permissions: { issues: 'write', repository_projects: 'admin' } },
    ];
    const res = await service.http.post('/api/connections').set(owner.auth).send(createBody({ tools }));
    expect(res.status).toBe(201);
    expect(res.body.tools).toEqual(tools);
    const read = await service.http.get(`/api/connections/${res.body.id}`).set(owner.auth);
    expect(read.body.tools).toEqual(tools);
  });

  it('refuses an app that is not configured (422 unknown_app), before looking at the installation', async () => {
    const owner = human(service, 'owner');
    const res = await service.http
      .post('/api/connections')
      .set(owner.auth)
      .send(createBody({ app: 'acme', externalInstallationId: '1' }));
    expectProblem(res, 422, 'unknown_app');
  });

  it('refuses an agent token (403 credential_not_accepted)', async () => {
    const owner = human(service, 'owner');
    const agent = await installAgent(service, owner, await podWith(service, owner), 'connector-bot');
    expectProblem(await service.http.post('/api/connections').set(agent.auth).send(createBody()), 403, 'credential_not_accepted');
  });
});

describe('GET and PATCH /api/connections/:connectionId', () => {
  let owner: Human;
  let other: Human;
  let connectionId: string;

  beforeAll(async () => {
    owner = human(service, 'owner');
    other = human(service, 'other');
    connectionId = (await connection(service, owner, brokerId)).id;
  });

  it('shows the connection to its owner', async () => {
    const res = await service.http.get(`/api/connections/${connectionId}`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: connectionId, ownerId: owner.userId, status: 'connected' });
    expect(res.body.tools.map((t: { name: string }) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
  });

  it('answers any other human 404, exactly like a connection that does not exist', async () => {
    const hidden = await service.http.get(`/api/connections/${connectionId}`).set(other.auth);
    const missing = await service.http.get('/api/connections/con_01jd0000000000000000000000').set(other.auth);
    expectProblem(hidden, 404, 'not_found');
    expectProblem(missing, 404, 'not_found');
    expect(hidden.body.detail).toBe(missing.body.detail);
  });

  it('lets the owner disconnect and reconnect', async () => {
    const off = await service.http.patch(`/api/connections/${connectionId}`).set(owner.auth).send({ status: 'disconnected' });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ id: connectionId, status: 'disconnected' });
    expect((await service.http.get(`/api/connections/${connectionId}`).set(owner.auth)).body.status).toBe('disconnected');
    const on = await service.http.patch(`/api/connections/${connectionId}`).set(owner.auth).send({ status: 'connected' });
    expect(on.status).toBe(200);
    expect(on.body.status).toBe('connected');
  });

  it('answers another human trying to change it 404 and changes nothing', async () => {
    const res = await service.http.patch(`/api/connections/${connectionId}`).set(other.auth).send({ status: 'disconnected' });
    expectProblem(res, 404, 'not_found');
    expect((await service.http.get(`/api/connections/${connectionId}`).set(owner.auth)).body.status).toBe('connected');
  });

  it('refuses unknown fields and unknown statuses (400)', async () => {
    const patch = (body: object) => service.http.patch(`/api/connections/${connectionId}`).set(owner.auth).send(body);
    expectProblem(await patch({ status: 'connected', ownerId: other.userId }), 400, 'invalid_request');
    expectProblem(await patch({ status: 'paused' }), 400, 'invalid_request');
    expectProblem(await patch({}), 400, 'invalid_request');
  });
});
