import Ajv2020 from 'ajv/dist/2020';
import { digestOf } from '../../src/kernel/digest';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, rootGrant } from '../support/world';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord, callRecordsOf } from '../support/call-records';
import { expectProblem } from '../support/problems';
import examples from './fixtures/authzen-1.0-examples.json';
import requestSchema from './fixtures/authzen-1.0-evaluation-request.schema.json';
import responseSchema from './fixtures/authzen-1.0-evaluation-response.schema.json';

/**
 * OpenID AuthZEN 1.0 over the broker check, through HTTP against the real service, with the
 * specification's own examples (fixtures/, copied from it) and its JSON Schemas.
 */

let service: TestService;
let world: BrokerWorld;
const ajv = new Ajv2020({ strict: false });
const validRequest = ajv.compile(requestSchema);
const validDecision = ajv.compile(responseSchema);

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

const readable = (tools = ['repos.read_file', 'pulls.list'], options: Record<string, unknown> = {}) =>
  rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, { tools, ...options }).then((g) => g.id);

const agentSubject = () => ({ type: 'agent', id: world.agent.agentId, properties: { token: world.agent.token } });

function evaluation(grantId: string, extra: { tool?: string; args?: Record<string, unknown>; subject?: unknown } = {}) {
  return {
    subject: extra.subject ?? agentSubject(),
    action: { name: extra.tool ?? 'repos.read_file' },
    resource: { type: 'grant', id: grantId, properties: { args: extra.args ?? { path: 'README.md' } } },
  };
}

const evaluate = (body: unknown, auth = world.broker.auth) =>
  service.http
    .post('/access/v1/evaluation')
    .set(auth)
    .send(body as object);
const evaluateMany = (body: unknown) =>
  service.http
    .post('/access/v1/evaluations')
    .set(world.broker.auth)
    .send(body as object);

/**
 * A published example bound to this service: its subjects become our agent, its actions our
 * tool, its resources our grants (by the example's id); every other member and the structure
 * (defaults, overrides, options) stay as published.
 */
function bound(example: unknown, grants: Record<string, string>): unknown {
  if (Array.isArray(example)) return example.map((item) => bound(item, grants));
  if (typeof example !== 'object' || example === null) return example;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(example)) {
    if (key === 'subject') out[key] = agentSubject();
    else if (key === 'action') out[key] = { name: 'repos.read_file' };
    else if (key === 'resource') {
      const id = (value as { id: string }).id;
      out[key] = { type: 'grant', id: grants[id], properties: { args: { path: 'README.md' } } };
    } else out[key] = bound(value, grants);
  }
  return out;
}

describe('the PDP metadata', () => {
  it('names the evaluation endpoints under the public URL, with the published example’s keys', async () => {
    const res = await service.http.get('/.well-known/authzen-configuration').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const pdp = res.body.policy_decision_point as string;
    expect(new URL(pdp).pathname).toBe('/');
    expect(res.body).toEqual({
      policy_decision_point: pdp,
      access_evaluation_endpoint: `${pdp}/access/v1/evaluation`,
      access_evaluations_endpoint: `${pdp}/access/v1/evaluations`,
    });
    // Parameters a PDP lacks are omitted: this one offers no search.
    const published = Object.keys(examples.pdpMetadataResponse);
    expect(published).toEqual(expect.arrayContaining(['policy_decision_point', 'access_evaluation_endpoint']));
    expect(Object.keys(res.body).filter((key) => key.startsWith('search_'))).toEqual([]);
  });
});

describe('the published examples, sent as published', () => {
  it('are valid AuthZEN requests, and each is answered decision: false (a subject and resource we do not know), echoing X-Request-ID', async () => {
    for (const request of [examples.accessEvaluation.request, examples.accessEvaluation.httpsRequest]) {
      expect(validRequest(request)).toBe(true);
      const res = await evaluate(request).set('X-Request-ID', 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716');
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toBe('bfe9eb29-ab87-4ca3-be83-a1d5d8305716');
      expect(validDecision(res.body)).toBe(true);
      expect(res.body).toEqual({
        decision: false,
        context: { reason: 'resource_type_unsupported', error: { status: 400, message: 'resource.type must be `grant`' } },
      });
    }
  });

  it('answers every published batch with one false decision per evaluation, in the response shape published', async () => {
    const batches = [
      examples.accessEvaluations.withoutDefaults,
      examples.accessEvaluations.sharedSubjectAndContext,
      examples.accessEvaluations.actionDefaultOverridden,
      examples.accessEvaluations.httpsRequest,
      ...Object.values(examples.evaluationsSemantics).map((semantic) => semantic.request),
    ];
    for (const batch of batches) {
      const res = await evaluateMany(batch);
      expect(res.status).toBe(200);
      const semantic = (batch as { options?: { evaluations_semantic?: string } }).options?.evaluations_semantic;
      // deny_on_first_deny stops at the first of them.
      expect(res.body.evaluations).toHaveLength(semantic === 'deny_on_first_deny' ? 1 : batch.evaluations.length);
      for (const decision of res.body.evaluations) {
        expect(validDecision(decision)).toBe(true);
        expect(decision.decision).toBe(false);
      }
      expect(Object.keys(res.body)).toEqual(Object.keys(examples.accessEvaluations.httpsResponse));
    }
  });

  it('refuses the options example, whose evaluation has no action and no default, with a 400 problem', async () => {
    const res = await evaluateMany(examples.accessEvaluations.optionsExample);
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([{ path: 'evaluations.0.action', message: 'Required' }]);
  });
});

describe('the published examples, bound to grants of this broker', () => {
  let grants: Record<string, string>;
  beforeEach(async () => {
    // Documents 1 and 3 are grants that allow reading; 2 one that does not (as in the published answers).
    grants = { '1': await readable(), '2': await readable(['pulls.list']), '3': await readable() };
  });

  it.each(['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const)(
    '%s answers the published decisions, and checks nothing after a short-circuit',
    async (semantic) => {
      const { request, response } = examples.evaluationsSemantics[semantic];
      const res = await evaluateMany(bound(request, grants));
      expect(res.status).toBe(200);
      expect(res.body.evaluations.map((d: { decision: boolean }) => d.decision)).toEqual(response.evaluations.map((d) => d.decision));
      const answered = res.body.evaluations.length;
      for (const [index, id] of ['1', '2', '3'].entries()) {
        const records = await callRecordsOf(service.deps.db, grants[id]!);
        expect(records).toHaveLength(index < answered ? 1 : 0);
      }
      const denied = res.body.evaluations[1];
      if (denied) {
        expect(denied.context).toMatchObject({ reason: 'tool_not_allowed', callId: expect.stringMatching(/^call_/) });
        expect(denied.context.explanation).toMatchObject({ rule: 'broker.check.tool_not_allowed', level: 0 });
      }
    },
  );

  it('applies top-level defaults and a member’s override (the published defaults example)', async () => {
    const res = await evaluateMany(
      bound(examples.accessEvaluations.sharedSubjectAndContext, {
        'boxcarring.md': grants['1']!,
        'subject-search.md': grants['2']!,
        'resource-search.md': grants['3']!,
      }),
    );
    expect(res.body.evaluations.map((d: { decision: boolean }) => d.decision)).toEqual([true, false, true]);
  });

  it('answers a batch without evaluations as one decision', async () => {
    const res = await evaluateMany(evaluation(grants['1']!));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ decision: true, context: { reason: 'allowed' } });
  });
});

describe('one evaluation is the broker check', () => {
  it('allows, records the call with the args’ digest, logs the decision, and takes the outcome', async () => {
    const grantId = await readable(undefined, { budget: { calls: 10, windowMs: 60_000 } });
    const res = await evaluate(evaluation(grantId, { args: { path: 'src/a.ts', ref: 'main' } })).expect(200);
    expect(res.body).toEqual({ decision: true, context: { reason: 'allowed', callId: expect.stringMatching(/^call_/) } });
    const record = await callRecord(service.deps.db, res.body.context.callId);
    expect(record).toMatchObject({ grant_id: grantId, outcome: 'pending', principal_kind: 'agent', principal_id: world.agent.agentId });
    expect(record.args_digest).toBe(digestOf({ ref: 'main', path: 'src/a.ts' }));
    await decisionsWritten();
    const logged = service.logs.map((line) => JSON.parse(line)).filter((line) => line.path === 'broker/check/decision');
    expect(logged.map((line) => line.decision_id)).toContain(record.decision_id);
    expect(service.logs.join('\n')).not.toContain(world.agent.token);
    await service.http
      .post(`/api/broker/calls/${res.body.context.callId}/outcome`)
      .set(world.broker.auth)
      .send({ outcome: 'succeeded' })
      .expect(200);
  });

  it('answers as the plain check does for the same call, denial and budget included', async () => {
    const grantId = await readable(undefined, { budget: { calls: 2, windowMs: 60_000 } });
    const plain = await checkAs(service, world, grantId, world.agent, { tool: 'issues.create_comment' });
    const viaAuthzen = await evaluate(evaluation(grantId, { tool: 'issues.create_comment' }));
    expect(plain.body).toMatchObject({ decision: 'deny', reason: 'tool_not_allowed' });
    expect(viaAuthzen.body).toMatchObject({ decision: false, context: { reason: plain.body.reason, explanation: plain.body.explanation } });
    expect(await callRecordsOf(service.deps.db, grantId)).toHaveLength(2);

    await checkAs(service, world, grantId, world.agent).expect(200);
    await evaluate(evaluation(grantId)).expect(200);
    const spent = await evaluate(evaluation(grantId));
    expect(spent.body).toMatchObject({ decision: false, context: { reason: 'budget_exhausted', retryAfterMs: expect.any(Number) } });
    expect(spent.body.context.retryAfterMs).toBeGreaterThan(0);
  });

  it('refuses another broker’s grant exactly as an unknown one, and records nothing', async () => {
    const grantId = await readable();
    const other = await broker(service, 'other-broker');
    const foreign = await evaluate(evaluation(grantId), other.auth).expect(200);
    const unknown = await evaluate(evaluation('grt_01jd6x3c4vf8r9t2y5u7w0z1ab')).expect(200);
    expect(foreign.body).toEqual({
      decision: false,
      context: { reason: 'not_found', error: { status: 404, message: 'Resource not found' } },
    });
    expect(unknown.body).toEqual(foreign.body);
    expect(await callRecordsOf(service.deps.db, grantId)).toEqual([]);
  });

  it('refuses a subject.id that is not the token’s, and a token that does not verify, before any record or unit', async () => {
    const grantId = await readable(undefined, { budget: { calls: 1, windowMs: 60_000 } });
    const impostor = await evaluate(evaluation(grantId, { subject: { ...agentSubject(), id: 'agt_01jd6x3c4vf8r9t2y5u7w0z1ab' } }));
    expect(impostor.body).toMatchObject({ decision: false, context: { reason: 'subject_mismatch', error: { status: 403 } } });
    const asUser = await evaluate(evaluation(grantId, { subject: { ...agentSubject(), type: 'user' } }));
    expect(asUser.body.context.reason).toBe('subject_mismatch');
    const forged = await evaluate(evaluation(grantId, { subject: { ...agentSubject(), properties: { token: 'art_nope' } } }));
    expect(forged.body).toMatchObject({ decision: false, context: { reason: 'subject_token_invalid', error: { status: 401 } } });
    const tokenless = await evaluate(evaluation(grantId, { subject: { type: 'agent', id: world.agent.agentId } }));
    expect(tokenless.body.context.reason).toBe('subject_token_missing');
    expect(await callRecordsOf(service.deps.db, grantId)).toEqual([]);
    // The one unit of budget is still there.
    expect((await evaluate(evaluation(grantId))).body.decision).toBe(true);
  });

  it('holds revocation and expiry on this path too, whatever the caller adds to the request', async () => {
    const grantId = await readable();
    await service.http.post(`/api/grants/${grantId}/revoke`).set(world.owner.auth).expect(200);
    // Facts the caller supplies never stand in for what the service knows.
    const claims = { approved: true, revoked: false, principal: { kind: 'agent', id: world.agent.agentId } };
    const res = await evaluate({
      ...evaluation(grantId),
      subject: { ...agentSubject(), properties: { token: world.agent.token, role: 'admin' } },
      context: claims,
    });
    expect(res.body).toMatchObject({ decision: false, context: { reason: 'revoked' } });
  });

  it('lets a human be the subject with a forwarded JWT', async () => {
    const grantId = await readable();
    const subject = { type: 'user', id: world.member.userId, properties: { token: world.member.token } };
    expect((await evaluate(evaluation(grantId, { subject }))).body).toMatchObject({ decision: true });
  });
});

describe('what the endpoints refuse', () => {
  it('asks for the broker’s own credential (401, and 403 for another kind)', async () => {
    const body = evaluation('grt_01jd6x3c4vf8r9t2y5u7w0z1ab');
    expectProblem(await service.http.post('/access/v1/evaluation').send(body), 401, 'unauthenticated');
    expectProblem(await service.http.post('/access/v1/evaluations').send(body), 401, 'unauthenticated');
    expectProblem(await evaluate(body, world.owner.auth), 403, 'credential_not_accepted');
  });

  it('answers malformed AuthZEN with a 400 problem, never a decision', async () => {
    const good = evaluation('grt_01jd6x3c4vf8r9t2y5u7w0z1ab');
    const bad = [
      { action: good.action, resource: good.resource },
      { ...good, subject: { type: 'agent' } },
      { ...good, subject: { type: 7, id: 'x' } },
      { ...good, action: {} },
      { ...good, resource: { type: 'grant', id: 'x', properties: [] } },
      { ...good, context: 'now' },
    ];
    for (const body of bad) expectProblem(await evaluate(body), 400, 'invalid_request');
    expectProblem(await evaluateMany({ ...good, options: { evaluations_semantic: 'deny_all' } }), 400, 'invalid_request');
    expectProblem(await evaluateMany({ evaluations: [good, {}] }), 400, 'invalid_request');
    const noTop = await evaluateMany({ evaluations: [] });
    expectProblem(noTop, 400, 'invalid_request');
    const text = await service.http.post('/access/v1/evaluation').set(world.broker.auth).set('Content-Type', 'text/plain').send('{}');
    expectProblem(text, 415, 'unsupported_media_type');
  });

  it('keeps a batch to 64 evaluations, and a member that cannot be a check is its own false decision', async () => {
    const grantId = await readable();
    const tooMany = { ...evaluation(grantId), evaluations: Array.from({ length: 65 }, () => ({})) };
    expectProblem(await evaluateMany(tooMany), 400, 'invalid_request');
    expect(await callRecordsOf(service.deps.db, grantId)).toEqual([]);
    const mixed = await evaluateMany({
      subject: agentSubject(),
      action: { name: 'repos.read_file' },
      evaluations: [
        { resource: { type: 'grant', id: grantId, properties: { args: 'not an object' } } },
        { resource: { type: 'grant', id: grantId }, action: { name: 'bad tool name!' } },
        { resource: { type: 'grant', id: grantId } },
      ],
    });
    expect(mixed.body.evaluations).toEqual([
      {
        decision: false,
        context: { reason: 'invalid_request', error: { status: 400, message: 'resource.properties.args must be an object' } },
      },
      {
        decision: false,
        context: { reason: 'invalid_request', error: { status: 400, message: expect.stringMatching(/^action\.name: /) } },
      },
      { decision: true, context: { reason: 'allowed', callId: expect.stringMatching(/^call_/) } },
    ]);
  });
});
