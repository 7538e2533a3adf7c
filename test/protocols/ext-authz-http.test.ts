import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { digestOf } from '../../src/kernel/digest';
import { startService, type TestService } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord, callRecordsOf } from '../support/call-records';

let service: TestService;
let world: BrokerWorld;

const ROUTES = [
  { method: 'GET', path: '/repos/{owner}/{repo}/contents/{path*}', tool: 'repos.read_file' },
  { method: 'POST', path: '/repos/{owner}/{repo}/issues/{issue}/comments', tool: 'issues.create_comment' },
  { method: 'POST', path: '/mcp', mcp: true },
];

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
  await service.http.put(`/api/brokers/${world.broker.id}/routes`).set(world.broker.auth).send({ routes: ROUTES }).expect(200);
});
afterAll(() => service.close());

/** What Envoy sends in HTTP mode: the original request under /ext-authz, the broker's credential added. */
function envoyAsks(method: 'get' | 'post', path: string, headers: Record<string, string>, body?: unknown) {
  const req = service.http[method](`/ext-authz${path}`).set({ 'x-broker-authorization': world.broker.auth.Authorization, ...headers });
  return body === undefined ? req : req.set('content-type', 'application/json').send(JSON.stringify(body));
}
const agentHeaders = (grantId: string) => ({ authorization: `Bearer ${world.agent.token}`, 'grant-id': grantId });
const mcpCall = (name: string, args: unknown) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

describe('Envoy ext_authz over HTTP', () => {
  it('allows a mapped REST call as the broker check would, strips the agent token, names the recorded call', async () => {
    const { rootId } = await chainOf(service, world, 0, { budget: { calls: 10, windowMs: 60_000 } });
    const res = await envoyAsks('get', '/repos/acme/api/contents/src/a.ts?ref=main', agentHeaders(rootId));
    expect(res.status).toBe(200);
    expect(res.headers['x-envoy-auth-headers-to-remove']).toBe('grant-id,authorization');
    const callId = res.headers['x-grant-call-id'] as string;
    expect(callId).toMatch(/^call_/);
    const record = await callRecord(service.deps.db, callId);
    expect(record).toMatchObject({ grant_id: rootId, tool: 'repos.read_file', outcome: 'pending', reason: 'allowed' });
    expect(record.principal_id).toBe(world.agent.agentId);
    expect(record.args_digest).toBe(digestOf({ owner: 'acme', repo: 'api', path: 'src/a.ts', ref: 'main' }));
    // The same call through the broker check: allowed alike, one more unit taken from the same budget.
    const direct = await checkAs(service, world, rootId, world.agent, {
      args: { owner: 'acme', repo: 'api', path: 'src/a.ts', ref: 'main' },
    });
    expect(direct.body).toMatchObject({ decision: 'allow', budget: { remaining: 8 } });
    // The broker reports the outcome as for any check.
    await service.http.post(`/api/broker/calls/${callId}/outcome`).set(world.broker.auth).send({ outcome: 'succeeded' }).expect(200);
  });

  it('denies what the grant does not allow with the reason, explanation and call', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const res = await envoyAsks('post', '/repos/acme/api/issues/7/comments', agentHeaders(rootId), { body: 'hi' });
    const direct = await checkAs(service, world, rootId, world.agent, {
      tool: 'issues.create_comment',
      args: { owner: 'acme', repo: 'api', issue: '7', body: 'hi' },
    });
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ reason: direct.body.reason, code: direct.body.reason, explanation: direct.body.explanation });
    expect(res.body.reason).toBe('tool_not_allowed');
    expect(res.headers['x-grant-call-id']).toBe(res.body.callId);
    expect((await callRecord(service.deps.db, res.body.callId)).outcome).toBe('denied');
  });

  it('asks for an approval (403 naming it), then allows the approved call once', async () => {
    const { rootId } = await chainOf(service, world, 0, { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' });
    const ask = () => envoyAsks('post', '/mcp', agentHeaders(rootId), mcpCall('issues.create_comment', { issue: 7, body: 'LGTM' }));
    const asked = await ask();
    expect(asked.status).toBe(403);
    expect(asked.body).toMatchObject({ reason: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });
    expect(asked.headers['x-grant-approval-id']).toBe(asked.body.approvalId);
    expect((await ask()).body.reason).toBe('approval_pending');
    await service.http.post(`/api/approvals/${asked.body.approvalId}/approve`).set(world.owner.auth).send({}).expect(200);
    const approved = await ask();
    expect(approved.status).toBe(200);
    expect((await callRecord(service.deps.db, approved.headers['x-grant-call-id'] as string)).approval_id).toBe(asked.body.approvalId);
    expect((await ask()).status).toBe(403);
  });

  it('answers a spent budget 429 with retry-after in whole seconds', async () => {
    const { rootId } = await chainOf(service, world, 0, { budget: { calls: 1, windowMs: 90_500 } });
    const read = () => envoyAsks('post', '/mcp', agentHeaders(rootId), mcpCall('repos.read_file', { path: 'README.md' }));
    expect((await read()).status).toBe(200);
    const spent = await read();
    expect(spent.status).toBe(429);
    expect(spent.body.reason).toBe('budget_exhausted');
    expect(Number(spent.headers['retry-after'])).toBeGreaterThanOrEqual(90);
    expect(Number(spent.headers['retry-after'])).toBeLessThanOrEqual(91);
  });

  it('lets MCP messages without a tool call pass unrecorded, and denies other MCP methods', async () => {
    const { rootId } = await chainOf(service, world, 0);
    for (const method of ['initialize', 'tools/list', 'notifications/initialized']) {
      const res = await envoyAsks('post', '/mcp', agentHeaders(rootId), { jsonrpc: '2.0', id: 1, method, params: {} });
      expect([method, res.status]).toEqual([method, 200]);
      expect(res.headers['x-grant-call-id']).toBeUndefined();
    }
    const resources = await envoyAsks('post', '/mcp', agentHeaders(rootId), {
      jsonrpc: '2.0',
      id: 2,
      method: 'resources/read',
      params: { uri: 'file:///etc/passwd' },
    });
    expect(resources.status).toBe(403);
    expect(resources.body.reason).toBe('method_not_allowed');
    // Even a message that calls no tool needs a valid agent credential.
    const stranger = await envoyAsks(
      'post',
      '/mcp',
      { authorization: 'Bearer art_notatoken', 'grant-id': rootId },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    );
    expect(stranger.status).toBe(401);
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
  });

  it("answers another broker's grant as an unknown one, and records nothing", async () => {
    const { rootId } = await chainOf(service, world, 0);
    const other = await broker(service, 'other-broker');
    await service.http.put(`/api/brokers/${other.id}/routes`).set(other.auth).send({ routes: ROUTES }).expect(200);
    const res = await service.http
      .get('/ext-authz/repos/acme/api/contents/README.md')
      .set({ 'x-broker-authorization': other.auth.Authorization, ...agentHeaders(rootId) });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('not_found');
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
    // Nor may it read or replace the first broker's routes.
    expect((await service.http.get(`/api/brokers/${world.broker.id}/routes`).set(other.auth)).status).toBe(404);
    expect((await service.http.put(`/api/brokers/${world.broker.id}/routes`).set(other.auth).send({ routes: [] })).status).toBe(404);
  });

  it('refuses: no broker credential, an unmapped route, a path walking out, a body over the limit, no grant', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const noBroker = await service.http.get('/ext-authz/repos/acme/api/contents/README.md').set(agentHeaders(rootId));
    expect(noBroker.status).toBe(401);
    const agentAsBroker = await service.http
      .get('/ext-authz/repos/acme/api/contents/README.md')
      .set({ ...agentHeaders(rootId), 'x-broker-authorization': `Bearer ${world.agent.token}` });
    expect(agentAsBroker.status).toBe(401);
    const unmapped = await envoyAsks('get', '/orgs/acme/members', agentHeaders(rootId));
    expect([unmapped.status, unmapped.body.reason]).toEqual([403, 'no_route']);
    const traversal = await envoyAsks('get', '/repos/acme/api/contents/src/%2e%2e/%2e%2e/secrets', agentHeaders(rootId));
    expect(traversal.status).toBe(400);
    const encodedSlash = await envoyAsks('get', '/repos/acme%2Fother/api/contents/x', agentHeaders(rootId));
    expect(encodedSlash.status).toBe(400);
    const huge = await envoyAsks('post', '/mcp', agentHeaders(rootId), mcpCall('repos.read_file', { path: 'x'.repeat(70 * 1024) }));
    expect(huge.status).toBe(413);
    const noGrant = await envoyAsks('get', '/repos/acme/api/contents/README.md', { authorization: `Bearer ${world.agent.token}` });
    expect([noGrant.status, noGrant.body.reason]).toEqual([403, 'grant_required']);
    const noAgent = await envoyAsks('get', '/repos/acme/api/contents/README.md', { 'grant-id': rootId });
    expect(noAgent.status).toBe(401);
    const hostile = await envoyAsks('post', '/mcp', agentHeaders(rootId), mcpCall('repos.read_file', { path: 'a\u0000b' }));
    expect(hostile.status).toBe(400);
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
  });

  it('refuses a route map that is not one', async () => {
    const put = (routes: unknown) => service.http.put(`/api/brokers/${world.broker.id}/routes`).set(world.broker.auth).send({ routes });
    expect((await put([{ method: 'GET', path: '/a/{x*}/b', tool: 'repos.read_file' }])).status).toBe(400);
    expect((await put([{ method: 'GET', path: '/a', tool: 'repos.read_file', mcp: true }])).status).toBe(400);
    expect((await put([{ method: 'GET', path: '/a/{x}/{x}', tool: 'repos.read_file' }])).status).toBe(400);
    expect((await put([{ mcpMethod: 'tools/call', tool: 'repos.read_file' }])).status).toBe(400);
    const kept = await service.http.get(`/api/brokers/${world.broker.id}/routes`).set(world.broker.auth);
    expect(kept.body.routes).toEqual(ROUTES);
  });
});

describe('npm run admin -- broker routes', () => {
  const cli = path.resolve(__dirname, '../../dist/src/admin/cli.js');
  const admin = (args: string[]) => promisify(execFile)(process.execPath, [cli, ...args], { timeout: 20_000 });

  it('puts a route map from a file for the broker, as the API does, and refuses a bad one', async () => {
    const other = await broker(service, 'routes-by-operator');
    const dir = mkdtempSync(path.join(tmpdir(), 'routes-'));
    const file = path.join(dir, 'routes.json');
    writeFileSync(file, JSON.stringify({ routes: [{ method: 'GET', path: '/v1/items/{id}', tool: 'repos.read_file' }] }));
    const { stdout } = await admin(['broker', 'routes', '--id', other.id, '--file', file]);
    expect(JSON.parse(stdout)).toEqual({ brokerId: other.id, routes: 1 });
    const read = await service.http.get(`/api/brokers/${other.id}/routes`).set(other.auth).expect(200);
    expect(read.body.routes).toEqual([{ method: 'GET', path: '/v1/items/{id}', tool: 'repos.read_file' }]);

    writeFileSync(file, JSON.stringify({ routes: [{ method: 'GET', path: '/v1/../x', tool: 'repos.read_file' }] }));
    await expect(admin(['broker', 'routes', '--id', other.id, '--file', file])).rejects.toMatchObject({ code: 2 });
    writeFileSync(file, JSON.stringify({ routes: [] }));
    await expect(admin(['broker', 'routes', '--id', 'brk_01jd6x3c4vf8r9t2y5u7w0z1ab', '--file', file])).rejects.toMatchObject({ code: 2 });
  });
});
