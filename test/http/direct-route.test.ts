import { directRouteFor, directTable } from '../../src/speedups/direct-http';
import { mintToken } from '../../src/credentials/tokens';
import { brokerWorld, chainOf, type BrokerWorld } from '../support/broker-world';
import { allRoutes } from '../support/routes';
import { startService, type TestService } from '../support/service';
import { broker } from '../support/world';

/**
 * The broker check is served on Node's own HTTP server ahead of Koa (src/speedups/direct-http.ts).
 * Every answer must be the one Koa gives to the same request: the same request is sent both ways (a
 * `Content-Encoding: identity` header sends it through Koa, which reads it exactly as without).
 */
let service: TestService;
let world: BrokerWorld;
let leafId: string;

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
  leafId = (await chainOf(service, world, 2, { budget: { calls: 100, windowMs: 3_600_000 } })).leafId;
});
afterAll(() => service.close());

describe('which requests are served directly', () => {
  const table = directTable(allRoutes);

  it('is the broker check and its protocol doors (AuthZEN, OPA), as a plain POST', () => {
    expect([...table.keys()]).toEqual(['/api/broker/check', '/access/v1/evaluation', '/v1/data/grant_broker/check']);
    const post = { method: 'POST', url: '/api/broker/check', headers: {} };
    expect(directRouteFor(table, post)?.operationId).toBe('checkCall');
    for (const other of [
      { ...post, method: 'GET' },
      { ...post, url: '/api/broker/check?x=1' },
      { ...post, url: '/api/broker/check/' },
      { ...post, headers: { 'content-encoding': 'gzip' } },
      { ...post, url: '/api/grants' },
    ]) {
      expect(directRouteFor(table, other)).toBeUndefined();
    }
  });
});

interface Sent {
  auth?: string;
  contentType?: string;
  body?: string;
  requestId?: string;
}

async function send(request: Sent, viaKoa: boolean) {
  let req = service.http.post('/api/broker/check');
  if (request.auth !== undefined) req = req.set('Authorization', request.auth);
  if (request.contentType !== undefined) req = req.set('Content-Type', request.contentType);
  if (request.requestId !== undefined) req = req.set('X-Request-Id', request.requestId);
  if (viaKoa) req = req.set('Content-Encoding', 'identity');
  const res = await (request.body === undefined ? req : req.send(request.body));
  return res;
}

/** What must be equal between the two paths (an allow's call id and budget naturally differ). */
function essence(res: Awaited<ReturnType<typeof send>>) {
  const body = res.body as Record<string, unknown>;
  return {
    status: res.status,
    contentType: res.headers['content-type'],
    retryAfter: res.headers['retry-after'],
    requestId: res.headers['x-request-id'] === undefined ? 'missing' : 'present',
    code: body.code,
    detail: body.detail,
    errors: body.errors,
    instance: body.instance,
    decision: body.decision,
    reason: body.reason,
    keys: Object.keys(body).sort(),
  };
}

describe('the direct path answers as Koa does', () => {
  const json = 'application/json';
  const checkBody = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ grantId: leafId, tool: 'repos.read_file', subjectToken: world.agent.token, args: { path: 'README.md' }, ...extra });

  const cases: Array<[string, () => Sent]> = [
    ['an allowed check', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody() })],
    [
      'a lower-case bearer scheme',
      () => ({ auth: world.broker.auth.Authorization.replace('Bearer', 'bearer'), contentType: json, body: checkBody() }),
    ],
    [
      'a tool outside the grant',
      () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ tool: 'pulls.merge' }) }),
    ],
    ['no credential', () => ({ contentType: json, body: checkBody() })],
    ['a forged broker token', () => ({ auth: `Bearer ${mintToken('bkt')}`, contentType: json, body: checkBody() })],
    ['a human token', () => ({ auth: world.owner.auth.Authorization, contentType: json, body: checkBody() })],
    ['no body', () => ({ auth: world.broker.auth.Authorization })],
    ['a text body', () => ({ auth: world.broker.auth.Authorization, contentType: 'text/plain', body: 'grant' })],
    ['malformed JSON', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: '{"grantId": ' })],
    ['a JSON scalar', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: '5' })],
    ['an empty JSON body', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: '' })],
    [
      'a charset parameter',
      () => ({ auth: world.broker.auth.Authorization, contentType: 'application/json; charset=utf-8', body: checkBody() }),
    ],
    [
      'a body over 64 KiB',
      () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ args: { x: 'y'.repeat(70_000) } }) }),
    ],
    ['a NUL in the tool', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ tool: 'x\u0000' }) })],
    [
      'a lone surrogate in args',
      () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ args: { a: '\ud800' } }) }),
    ],
    ['an unknown field', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ colour: 'red' }) })],
    ['a __proto__ key', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: '{"__proto__": {"x": 1}}' })],
    [
      'an unknown grant',
      () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ grantId: 'grt_01h455vb4pex5vsknk084sn02q' }) }),
    ],
    ['a request id', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: checkBody(), requestId: 'trace-42' })],
    ['a UTF-8 byte order mark', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: `\ufeff${checkBody()}` })],
    ['two byte order marks', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: `\ufeff\ufeff${checkBody()}` })],
    ['a byte order mark alone', () => ({ auth: world.broker.auth.Authorization, contentType: json, body: '\ufeff' })],
    [
      'a byte order mark after whitespace',
      () => ({ auth: world.broker.auth.Authorization, contentType: json, body: ` \ufeff${checkBody()}` }),
    ],
  ];

  it.each(cases)('%s', async (_name, make) => {
    const request = make();
    const direct = await send(request, false);
    const koa = await send(request, true);
    expect(essence(direct)).toEqual(essence(koa));
    expect(direct.status).toBeLessThan(500);
    if (request.requestId) expect(direct.headers['x-request-id']).toBe(request.requestId);
  });

  it('takes a body that starts with one UTF-8 byte order mark on both paths, as RFC 8259 lets a parser', async () => {
    const request = { auth: world.broker.auth.Authorization, contentType: json, body: `\ufeff${checkBody()}` };
    for (const viaKoa of [false, true]) {
      const res = await send(request, viaKoa);
      expect({ viaKoa, status: res.status, decision: res.body.decision }).toEqual({ viaKoa, status: 200, decision: 'allow' });
    }
  });

  it("answers another broker's grant with 404 both ways", async () => {
    const other = await broker(service);
    const request = { auth: other.auth.Authorization, contentType: json, body: checkBody() };
    const direct = await send(request, false);
    expect(essence(direct)).toEqual(essence(await send(request, true)));
    expect(direct.status).toBe(404);
  });

  it('takes one unit per allowed check on either path', async () => {
    const { leafId: fresh } = await chainOf(service, world, 1, { budget: { calls: 2, windowMs: 3_600_000 } });
    const request = { auth: world.broker.auth.Authorization, contentType: json, body: checkBody({ grantId: fresh }) };
    const first = await send(request, false);
    const second = await send(request, true);
    const third = await send(request, false);
    expect([first.body.decision, second.body.decision, third.body.decision]).toEqual(['allow', 'allow', 'deny']);
    expect(third.body.reason).toBe('budget_exhausted');
    expect(third.headers['retry-after']).toMatch(/^\d+$/);
  });
});
