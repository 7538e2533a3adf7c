import { request as httpRequest } from 'node:http';
import { expectProblem } from '../support/problems';
import { startedServiceWith } from '../support/service';
import { human } from '../support/world';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';

/**
 * Hostile text and shapes, on the routes an adversarial test broke (issue 8): each answered 5xx
 * before, and each must be a 4xx problem document now.
 */
const { service, world } = startedServiceWith(brokerWorld);

const LONE_SURROGATE = '\ud800';

/** JSON text nested `depth` levels deep: supertest cannot stringify it (the stack overflows). */
function deeplyNestedArgs(depth: number): string {
  return `{"grantId":"grt_01jd6x3c4vf8r9t2y5u7w0z1ab","tool":"repos.read_file","subjectToken":"x","args":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
}

describe('text that Postgres or the policy cannot take is a 400 everywhere', () => {
  it('refuses a NUL in a broker check tool name, its args or an id, instead of poisoning the call trail', async () => {
    const { rootId } = await chainOf(service, world, 0);
    expectProblem(await checkAs(service, world, rootId, world.agent, { tool: 'x\u0000' }), 400, 'invalid_request');
    expectProblem(await checkAs(service, world, rootId, world.agent, { args: { path: 'a\u0000b' } }), 400, 'invalid_request');
    expectProblem(await checkAs(service, world, `${rootId}\u0000`, world.agent), 400, 'invalid_request');
  });

  it('refuses a lone surrogate in tool, target.kind and audience instead of failing the policy with 503', async () => {
    const { rootId } = await chainOf(service, world, 0);
    expectProblem(await checkAs(service, world, rootId, world.agent, { tool: `repos${LONE_SURROGATE}` }), 400, 'invalid_request');
    const grant = (body: object) =>
      service.http
        .post('/api/grants')
        .set(world.owner.auth)
        .send({ connectionId: world.connectionId, target: { kind: 'pod', id: world.podId }, tools: ['repos.read_file'], ...body });
    expectProblem(await grant({ target: { kind: `pod${LONE_SURROGATE}`, id: world.podId } }), 400, 'invalid_request');
    expectProblem(await grant({ audience: [`user${LONE_SURROGATE}`] }), 400, 'invalid_request');
  });

  it('refuses a NUL in a pod name, a member id, a path id and a query value', async () => {
    expectProblem(await service.http.post('/api/pods').set(world.owner.auth).send({ name: 'pod\u0000' }), 400, 'invalid_request');
    const member = await service.http
      .post(`/api/pods/${world.podId}/members`)
      .set(world.owner.auth)
      .send({ userId: 'bob\u0000', role: 'member' });
    expectProblem(member, 400, 'invalid_request');
    expectProblem(await service.http.get('/api/grants/grt_%00').set(world.owner.auth), 400, 'invalid_request');
    expectProblem(await service.http.get(`/api/pods/${world.podId}/grants?cursor=%00`).set(world.owner.auth), 400, 'invalid_request');
  });

  it('refuses a __proto__ key in args', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const res = await service.http
      .post('/api/broker/check')
      .set(world.broker.auth)
      .set('Content-Type', 'application/json')
      .send(`{"grantId":"${rootId}","tool":"repos.read_file","subjectToken":"${world.agent.token}","args":{"__proto__":{"admin":true}}}`);
    expectProblem(res, 400, 'invalid_request');
  });
});

describe('numbers that do not fit a double are a 400 everywhere', () => {
  // JSON.parse reads them as ±Infinity, which the call's digest (canonical JSON) cannot write.
  const overflowing = ['{"k":1e999}', '{"k":-1e999}', '{"k":[1e400]}', '{"a":{"b":[0,{"c":-1E+309}]}}'];

  it.each(overflowing)('refuses args %s on the broker check, served directly and through Koa', async (args) => {
    const { rootId } = await chainOf(service, world, 0);
    const body = `{"grantId":"${rootId}","tool":"repos.read_file","subjectToken":"${world.agent.token}","args":${args}}`;
    for (const encoding of [undefined, 'identity']) {
      const req = service.http.post('/api/broker/check').set(world.broker.auth).set('Content-Type', 'application/json');
      const res = await (encoding ? req.set('Content-Encoding', encoding) : req).send(body);
      expectProblem(res, 400, 'invalid_request');
      expect(JSON.stringify(res.body.errors)).toContain('does not fit a double');
    }
  });

  it('refuses one in any other body, such as a grant budget', async () => {
    const res = await service.http
      .post('/api/grants')
      .set(world.owner.auth)
      .set('Content-Type', 'application/json')
      .send(
        `{"connectionId":"${world.connectionId}","target":{"kind":"pod","id":"${world.podId}"},"tools":["repos.read_file"],"budget":{"calls":1e999}}`,
      );
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([{ path: 'body.budget.calls', message: 'is a number that does not fit a double' }]);
  });
});

describe('deep nesting', () => {
  it('authenticates first: args 5 000 levels deep with a bogus broker token is a 401', async () => {
    const res = await service.http
      .post('/api/broker/check')
      .set('Authorization', `Bearer bkt_${'A'.repeat(46)}`)
      .set('Content-Type', 'application/json')
      .send(deeplyNestedArgs(5000));
    expectProblem(res, 401, 'unauthenticated');
  });

  it('bounds the depth with a 400 for a valid broker', async () => {
    const res = await service.http
      .post('/api/broker/check')
      .set(world.broker.auth)
      .set('Content-Type', 'application/json')
      .send(deeplyNestedArgs(5000));
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors[0].message).toMatch(/nested deeper than 32 levels/);
  });
});

describe('credentials and bodies', () => {
  it('takes the Bearer scheme case-insensitively on the broker check, as everywhere else', async () => {
    const { rootId } = await chainOf(service, world, 0);
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const res = await service.http
        .post('/api/broker/check')
        .set('Authorization', `${scheme} ${world.broker.token}`)
        .send({ grantId: rootId, tool: 'repos.read_file', subjectToken: world.agent.token, args: {} });
      expect({ scheme, status: res.status, decision: res.body.decision }).toEqual({ scheme, status: 200, decision: 'allow' });
    }
  });

  it('refuses a body on a DELETE route unless it is empty or {}', async () => {
    const owner = human(service, 'deleter');
    const podId = (await service.http.post('/api/pods').set(owner.auth).send({ name: 'p' }).expect(201)).body.id;
    const other = human(service, 'member');
    await service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: other.userId, role: 'member' }).expect(201);
    const withBody = await service.http.delete(`/api/pods/${podId}/members/${other.userId}`).set(owner.auth).send({ cascade: true });
    expectProblem(withBody, 400, 'invalid_request');
    await service.http.delete(`/api/pods/${podId}/members/${other.userId}`).set(owner.auth).send({}).expect(204);
  });

  it('answers a 40 KB Authorization header with a 431 problem document', async () => {
    const { port } = new URL(service.baseUrl);
    const res = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: Number(port),
          path: '/api/pods',
          method: 'GET',
          headers: { Authorization: `Bearer ${'a'.repeat(40_000)}` },
        },
        (answer) => {
          let body = '';
          answer.on('data', (chunk) => (body += chunk));
          answer.on('end', () => resolve({ status: answer.statusCode ?? 0, type: String(answer.headers['content-type']), body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(431);
    expect(res.type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.body)).toMatchObject({ status: 431, code: 'headers_too_large' });
  });
});
