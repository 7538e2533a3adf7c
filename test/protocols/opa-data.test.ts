import { digestOf } from '../../src/kernel/digest';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, rootGrant } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord, callRecordsOf } from '../support/call-records';
import { expectProblem } from '../support/problems';
import fixtures from './fixtures/opa-plugin-inputs.json';

/** OPA's REST data API over the broker check, through HTTP against the real service. */

let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

const grant = (options: Record<string, unknown> = {}) =>
  rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, options).then((g) => g.id);

const checkBody = (grantId: string, extra: Record<string, unknown> = {}) => ({
  grantId,
  tool: 'repos.read_file',
  subjectToken: world.agent.token,
  args: { path: 'README.md' },
  ...extra,
});

const query = (input: unknown, path = '/v1/data/grant_broker/check', auth: Record<string, string> = world.broker.auth) =>
  service.http.post(path).set(auth).send({ input });

/** A plugin's documented input, filled with this world's tokens and grant. */
function pluginInput(name: keyof typeof fixtures, values: { grantId: string; brokerToken?: string }) {
  const text = JSON.stringify(fixtures[name])
    .replaceAll('{{AGENT_TOKEN}}', world.agent.token)
    .replaceAll('{{GRANT_ID}}', values.grantId)
    .replaceAll('{{BROKER_TOKEN}}', values.brokerToken ?? world.broker.token);
  return (JSON.parse(text) as { input: unknown }).input;
}

describe('POST /v1/data/grant_broker/check with the broker check’s body', () => {
  it('allows as OPA would answer, records the call, logs the decision, and takes the outcome', async () => {
    const grantId = await grant({ budget: { calls: 5, windowMs: 60_000 } });
    const res = await query(checkBody(grantId, { args: { path: 'src/a.ts', ref: 'main' } })).expect(200);
    const callId = res.body.decision_id as string;
    expect(callId).toMatch(/^call_/);
    expect(res.body).toEqual({
      result: {
        allow: true,
        decision: 'allow',
        callId,
        reason: 'allowed',
        budget: { remaining: 4, resetMs: 60_000 },
        grantVersion: expect.any(String),
        receipt: { leafIndex: expect.any(Number) },
        headers: { 'x-grant-call-id': callId },
      },
      decision_id: callId,
    });
    const record = await callRecord(service.deps.db, callId);
    expect(record).toMatchObject({ grant_id: grantId, outcome: 'pending', principal_id: world.agent.agentId });
    expect(record.args_digest).toBe(digestOf({ path: 'src/a.ts', ref: 'main' }));
    await decisionsWritten();
    const logged = service.logs.map((line) => JSON.parse(line)).filter((line) => line.path === 'broker/check/decision');
    expect(logged.map((line) => line.decision_id)).toContain(record.decision_id);
    expect(service.logs.join('\n')).not.toContain(world.agent.token);
    await service.http.post(`/api/broker/calls/${callId}/outcome`).set(world.broker.auth).send({ outcome: 'succeeded' }).expect(200);
  });

  it('denies exactly as the plain check does, with the status a gateway answers: 403, and 429 with retry-after', async () => {
    const grantId = await grant({ budget: { calls: 1, windowMs: 60_000 } });
    const plain = await checkAs(service, world, grantId, world.agent, { tool: 'issues.create_comment' });
    const denied = await query(checkBody(grantId, { tool: 'issues.create_comment' })).expect(200);
    expect(denied.body.result).toMatchObject({
      allow: false,
      decision: 'deny',
      reason: plain.body.reason,
      explanation: plain.body.explanation,
      status_code: 403,
    });
    expect(denied.body.decision_id).toBe(denied.body.result.callId);
    expect((await callRecord(service.deps.db, denied.body.decision_id)).outcome).toBe('denied');

    expect((await query(checkBody(grantId))).body.result.allow).toBe(true);
    const spent = await query(checkBody(grantId));
    expect(spent.body.result).toMatchObject({ allow: false, reason: 'budget_exhausted', status_code: 429 });
    expect(Number(spent.body.result.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers another broker’s grant exactly as an unknown one, and records nothing', async () => {
    const grantId = await grant();
    const other = await broker(service, 'other-opa-broker');
    const foreign = await query(checkBody(grantId), undefined, other.auth).expect(200);
    const unknown = await query(checkBody('grt_01jd6x3c4vf8r9t2y5u7w0z1ab')).expect(200);
    expect(foreign.body).toEqual({ result: { allow: false, reason: 'not_found', status_code: 403, headers: {} } });
    expect(unknown.body).toEqual(foreign.body);
    expect(await callRecordsOf(service.deps.db, grantId)).toEqual([]);
  });

  it('answers a subject token that does not verify with allow: false, and records nothing', async () => {
    const grantId = await grant();
    const res = await query(checkBody(grantId, { subjectToken: 'art_nope' })).expect(200);
    expect(res.body).toEqual({ result: { allow: false, reason: 'subject_token_invalid', status_code: 401, headers: {} } });
    expect(await callRecordsOf(service.deps.db, grantId)).toEqual([]);
  });

  it('holds revocation on this path too, and refuses a broker-asserted principal', async () => {
    const grantId = await grant();
    await service.http.post(`/api/grants/${grantId}/revoke`).set(world.owner.auth).expect(200);
    expect((await query(checkBody(grantId))).body.result).toMatchObject({ allow: false, reason: 'revoked', status_code: 403 });
    const asserted = { grantId, tool: 'repos.read_file', principal: { kind: 'agent', id: world.agent.agentId }, args: {} };
    expect((await query(asserted)).body).toEqual({
      result: { allow: false, reason: 'principal_assertion_refused', status_code: 403, headers: {} },
    });
  });

  it('serves the allow subdocument as a boolean, and any other document as undefined ({})', async () => {
    const grantId = await grant();
    const allow = await query(checkBody(grantId), '/v1/data/grant_broker/check/allow').expect(200);
    expect(allow.body).toEqual({ result: true, decision_id: expect.stringMatching(/^call_/) });
    const denied = await query(checkBody(grantId, { tool: 'pulls.merge' }), '/v1/data/grant_broker/check/allow').expect(200);
    expect(denied.body.result).toBe(false);
    for (const path of ['/v1/data/grant_broker/other', '/v1/data/x', '/v1/data/grant_broker/check/allow/more']) {
      const res = await query(checkBody(grantId), path).expect(200);
      expect(res.body).toEqual({});
    }
    // Only the two checks above are recorded.
    expect(await callRecordsOf(service.deps.db, grantId)).toHaveLength(2);
  });
});

describe('the OPA plugins of Kong and APISIX', () => {
  it.each(['kong', 'kongWithParsedBody', 'apisix'] as const)(
    'take %s’s documented input, the broker’s token among its headers, and answer no_route where the broker maps none',
    async (name) => {
      const grantId = await grant();
      const res = await service.http
        .post('/v1/data/grant_broker/check')
        .send({ input: pluginInput(name, { grantId }) })
        .expect(200);
      expect(res.body).toEqual({ result: { allow: false, reason: 'no_route', status_code: 403, headers: {} } });
      expect(await callRecordsOf(service.deps.db, grantId)).toEqual([]);
    },
  );

  it('refuses a forwarded broker credential that is not one (401), as the bearer would be', async () => {
    const grantId = await grant();
    const forged = pluginInput('apisix', { grantId, brokerToken: `bkt_${'A'.repeat(46)}` });
    expectProblem(await service.http.post('/v1/data/grant_broker/check').send({ input: forged }), 401, 'unauthenticated');
    const human = pluginInput('kong', { grantId, brokerToken: world.owner.token });
    expectProblem(await service.http.post('/v1/data/grant_broker/check').send({ input: human }), 403, 'credential_not_accepted');
  });
});

describe('the OPA plugins of Kong and APISIX, through the broker’s route map', () => {
  const ROUTES = [
    { method: 'GET', path: '/repos/{owner}/{repo}/contents/{path*}', tool: 'repos.read_file' },
    { method: 'POST', path: '/repos/{owner}/{repo}/issues/{issue}/comments', tool: 'issues.create_comment' },
    { method: 'POST', path: '/mcp', mcp: true },
  ];
  beforeAll(async () => {
    await service.http.put(`/api/brokers/${world.broker.id}/routes`).set(world.broker.auth).send({ routes: ROUTES }).expect(200);
  });
  const ask = (input: unknown) => service.http.post('/v1/data/grant_broker/check').send({ input }).expect(200);
  /** Kong's documented input with another request line and body. */
  const kongAsking = (grantId: string, method: string, path: string, body?: unknown) => {
    const input = pluginInput('kong', { grantId }) as { request: { http: Record<string, unknown> } };
    Object.assign(input.request.http, { method, path, querystring: {}, ...(body === undefined ? {} : { parsed_body: body }) });
    return input;
  };

  it.each(['kong', 'kongWithParsedBody', 'apisix'] as const)(
    'allow %s’s mapped call as the broker check would, and record it',
    async (name) => {
      const { rootId } = await chainOf(service, world, 0);
      const res = await ask(pluginInput(name, { grantId: rootId }));
      expect(res.body.result).toMatchObject({ allow: true, decision: 'allow', reason: 'allowed' });
      expect(res.body.decision_id).toMatch(/^call_/);
      expect(res.body.result.headers).toEqual({ 'x-grant-call-id': res.body.decision_id });
      expect(await callRecord(service.deps.db, res.body.decision_id)).toMatchObject({
        grant_id: rootId,
        tool: 'repos.read_file',
        outcome: 'pending',
        reason: 'allowed',
      });
    },
  );

  it('denies a mapped call the grant does not allow, with the check’s reason, and records it', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const res = await ask(kongAsking(rootId, 'POST', '/repos/acme/api/issues/7/comments', { body: 'hi' }));
    expect(res.body.result).toMatchObject({ allow: false, decision: 'deny', reason: 'tool_not_allowed', status_code: 403 });
    expect((await callRecord(service.deps.db, res.body.decision_id)).outcome).toBe('denied');
  });

  it('answers no_route for a request no route maps, an MCP message without a tool call only with a valid agent token', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const unmapped = await ask(kongAsking(rootId, 'DELETE', '/repos/acme/api'));
    expect(unmapped.body).toEqual({ result: { allow: false, reason: 'no_route', status_code: 403, headers: {} } });
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    expect((await ask(kongAsking(rootId, 'POST', '/mcp', list))).body.result).toMatchObject({ allow: true, reason: 'no_tool_call' });
    const forged = kongAsking(rootId, 'POST', '/mcp', list);
    (forged.request.http.headers as Record<string, string>).authorization = `Bearer art_${'A'.repeat(40)}`;
    expect((await ask(forged)).body.result).toMatchObject({ allow: false, reason: 'subject_token_invalid', status_code: 401 });
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
  });
});

describe('what the data API refuses', () => {
  it('asks for the broker’s credential, on every document (401; 403 for another kind)', async () => {
    const body = { input: checkBody('grt_01jd6x3c4vf8r9t2y5u7w0z1ab') };
    for (const path of ['/v1/data/grant_broker/check', '/v1/data/grant_broker/check/allow', '/v1/data/anything']) {
      expectProblem(await service.http.post(path).send(body), 401, 'unauthenticated');
      expectProblem(await service.http.post(path).set(world.owner.auth).send(body), 403, 'credential_not_accepted');
    }
  });

  it('answers input of no known shape, or a check body the check refuses, with a 400 problem', async () => {
    for (const input of [undefined, 7, 'text', [], { request: {} }, { grantId: 'grt_1' }]) {
      expectProblem(await query(input), 400, 'invalid_request');
    }
    const badTool = await query(checkBody('grt_01jd6x3c4vf8r9t2y5u7w0z1ab', { tool: 'no spaces' }));
    expectProblem(badTool, 400, 'invalid_request');
    expect(badTool.body.errors).toEqual([{ path: 'input.tool', message: expect.any(String) }]);
    expect(JSON.stringify(badTool.body)).not.toContain(world.agent.token);
    expectProblem(await service.http.post('/v1/data/grant_broker/check').set(world.broker.auth).send([1]), 400, 'invalid_request');
  });
});
