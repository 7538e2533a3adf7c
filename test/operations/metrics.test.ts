import { startService, type TestService } from '../support/service';

/** /metrics is readable only where the deployment says (issue 8, §5). */
let withToken: TestService;
let apart: TestService;
const TOKEN = 'metrics-token-0123456789abcdef';

beforeAll(async () => {
  withToken = await startService({ METRICS_TOKEN: TOKEN });
  // The port number only switches the mode: the test harness listens on a free port of its own.
  apart = await startService({ METRICS_PORT: '9464' });
});
afterAll(async () => {
  await withToken.close();
  await apart.close();
});

describe('METRICS_TOKEN', () => {
  it('refuses a reader without the token, or with another one, with a 401 problem', async () => {
    for (const auth of [undefined, 'Bearer wrong-token-0123456789abcdef', `Basic ${TOKEN}`]) {
      const req = withToken.http.get('/metrics');
      const res = await (auth ? req.set('Authorization', auth) : req);
      expect({ auth, status: res.status, code: res.body.code }).toEqual({ auth, status: 401, code: 'unauthenticated' });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
  });

  it('serves the metrics to a bearer of the token', async () => {
    const res = await withToken.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`).expect(200);
    expect(res.text).toContain('http_request_duration_seconds');
  });
});

describe('METRICS_PORT', () => {
  it('takes /metrics off the API port and serves it on its own', async () => {
    expect((await apart.http.get('/metrics')).status).toBe(404);
    const res = await apart.metricsHttp!.get('/metrics').expect(200);
    expect(res.text).toContain('process_cpu_seconds_total');
    // Nothing else of the API is reachable there.
    expect((await apart.metricsHttp!.get('/api/openapi.json')).status).toBe(404);
  });
});
