import { bearer, humanToken, newUserId, startService, type TestService } from '../support/service';

let service: TestService;
let token: string;

beforeAll(async () => {
  service = await startService();
  token = humanToken(service.config, newUserId('alice'));
});
afterAll(() => service.close());

describe('HTTP conventions (CONTRACT §1)', () => {
  it('answers an unknown route with a 404 problem', async () => {
    const res = await service.http.get('/api/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 404, code: 'not_found', instance: '/api/nothing-here' });
  });

  it('answers a wrong method with 405 and an Allow header', async () => {
    const res = await service.http.put('/api/pods').set(bearer(token)).send({});
    expect(res.status).toBe(405);
    expect(res.body.code).toBe('method_not_allowed');
    expect(res.headers.allow).toContain('POST');
  });

  it('refuses malformed JSON with 400 and the path of the error', async () => {
    const res = await service.http.post('/api/pods').set(bearer(token)).set('Content-Type', 'application/json').send('{"name": ');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.errors).toEqual([{ path: 'body', message: 'malformed JSON' }]);
  });

  it('refuses unknown fields and wrong types with 400 naming each path', async () => {
    const res = await service.http.post('/api/pods').set(bearer(token)).send({ name: 7, colour: 'red' });
    expect(res.status).toBe(400);
    const paths = res.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['body.name', 'body']));
  });

  it('refuses a body over 64 KiB with 413', async () => {
    const res = await service.http
      .post('/api/pods')
      .set(bearer(token))
      .send({ name: 'x'.repeat(70 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('refuses a body that is not JSON with 415', async () => {
    const res = await service.http.post('/api/pods').set(bearer(token)).set('Content-Type', 'text/plain').send('name=x');
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
  });

  it('echoes a request id, or makes one', async () => {
    const given = await service.http.get('/healthz').set('X-Request-Id', 'abc-123');
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await service.http.get('/healthz').set('X-Request-Id', 'bad id with spaces');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports readiness of Postgres, Redis and the policy', async () => {
    const res = await service.http.get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ready', checks: { postgres: true, redis: true, policy: true } });
    expect(res.body.policyRevision).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Read from the Redis itself (the shared test Redis is usually started with no persistence).
    expect(res.body.redisDurability).toEqual({
      persistence: expect.stringMatching(/^(aof|rdb|none)$/),
      evictionPolicy: expect.any(String),
    });
  });
});
