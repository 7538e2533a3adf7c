import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer as createTcpServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ApiProblem, createClient, parseRetryAfter } from '@grant-broker/client';
import { brokerWorld, chainOf } from '../support/broker-world';
import { startService, type TestService } from '../support/service';
import { callRecordsOf } from '../support/call-records';

/**
 * The SDK's retries (clients/typescript/src/transport.ts): only what cannot do a thing twice. A
 * 503 and a 429 with Retry-After are retried for every method; a network failure is retried for a
 * GET, and for a POST only when no connection was ever made. Against stand-in servers that answer
 * what a test needs, and against the real service behind a link that loses the answer.
 */

/** A stand-in server: `answer` says what each request gets; every request is counted by method, and what it sent kept. */
async function standIn(answer: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  const seen: string[] = [];
  const sent: { authorization?: string; contentType?: string; body: string }[] = [];
  const server = createServer((req, res) => {
    seen.push(req.method ?? '?');
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      sent.push({ authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
      answer(req, res, seen.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { baseUrl, seen, sent, close: () => new Promise((resolve) => server.close(resolve)) };
}

const problem = (res: ServerResponse, status: number, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers }).end(JSON.stringify({ code: `http_${status}` }));
const ok = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
const postBody = { connectionId: 'con_1', target: { kind: 'pod', id: 'pod_1' }, tools: ['t'] };

describe('answers that are retried', () => {
  it('a 503 is retried for a POST too, honouring Retry-After in seconds', async () => {
    const server = await standIn((_req, res, n) => (n === 1 ? problem(res, 503, { 'retry-after': '1' }) : ok(res)));
    try {
      const client = createClient({ baseUrl: server.baseUrl, token: 't' });
      const started = Date.now();
      const res = await client.api.POST('/api/grants', { body: postBody });
      expect(res.response.status).toBe(200);
      expect(server.seen).toEqual(['POST', 'POST']);
      // The retry is the same request again: its body and headers, not an emptied copy.
      const first = { authorization: 'Bearer t', contentType: 'application/json', body: JSON.stringify(postBody) };
      expect(server.sent).toEqual([first, first]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    } finally {
      await server.close();
    }
  });

  // openapi-fetch takes a middleware's Request only if it is of the client's Request class: the platform's, so any one goes.
  it("a middleware's own Request (the platform's) is taken in place of the client's, and retried whole too", async () => {
    const server = await standIn((_req, res, n) => (n === 1 ? problem(res, 503, { 'retry-after': '0' }) : ok(res)));
    try {
      const client = createClient({ baseUrl: server.baseUrl, token: 't' });
      client.api.use({
        onRequest: ({ request }) => new Request(request, { headers: { ...Object.fromEntries(request.headers), 'x-via': 'm' } }),
      });
      expect((await client.api.POST('/api/grants', { body: postBody })).response.status).toBe(200);
      const sent = { authorization: 'Bearer t', contentType: 'application/json', body: JSON.stringify(postBody) };
      expect(server.sent).toEqual([sent, sent]);
    } finally {
      await server.close();
    }
  });

  it('a 429 is retried when it says Retry-After (here an HTTP-date), and answered as is when it does not', async () => {
    // An HTTP-date has whole seconds: two seconds ahead is at least one second of waiting.
    const server = await standIn((_req, res, n) =>
      n === 1 ? problem(res, 429, { 'retry-after': new Date(Date.now() + 2000).toUTCString() }) : n === 2 ? ok(res) : problem(res, 429),
    );
    try {
      const client = createClient({ baseUrl: server.baseUrl, token: 't' });
      const started = Date.now();
      expect((await client.api.POST('/api/grants', { body: postBody })).response.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(server.seen).toEqual(['POST', 'POST']);
      const refused = client.unwrap(client.api.POST('/api/grants', { body: postBody }));
      await expect(refused).rejects.toMatchObject({ status: 429, code: 'http_429' });
      expect(server.seen).toHaveLength(3);
    } finally {
      await server.close();
    }
  });

  it('a Retry-After longer than the longest wait is not waited for: the answer comes back at once', async () => {
    const server = await standIn((_req, res) => problem(res, 503, { 'retry-after': '3600' }));
    try {
      const client = createClient({ baseUrl: server.baseUrl, token: 't', maxRetryAfterMs: 5000 });
      const started = Date.now();
      await expect(client.unwrap(client.api.GET('/healthz'))).rejects.toMatchObject({ status: 503 });
      expect(server.seen).toEqual(['GET']);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      await server.close();
    }
  });

  it('reads Retry-After as seconds or an HTTP-date, and nothing else', () => {
    const now = Date.parse('2026-11-22T10:00:00.000Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('network failures', () => {
  it('a connection cut after the request was sent: a GET is retried, a POST never', async () => {
    const server = await standIn((req) => req.socket.destroy());
    try {
      const client = createClient({ baseUrl: server.baseUrl, token: 't', retries: 2 });
      await expect(client.api.GET('/healthz')).rejects.toThrow('fetch failed');
      expect(server.seen).toEqual(['GET', 'GET', 'GET']);
      server.seen.length = 0;
      await expect(client.api.POST('/api/grants', { body: postBody })).rejects.toThrow('fetch failed');
      expect(server.seen).toEqual(['POST']);
    } finally {
      await server.close();
    }
  });

  it('a POST is retried when no connection could be made at all', async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    let attempts = 0;
    const counting: typeof fetch = (input, init) => {
      attempts += 1;
      return fetch(input, init);
    };
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, token: 't', retries: 2, fetch: counting });
    const failed = await client.api.POST('/api/grants', { body: postBody }).catch((error: unknown) => error);
    expect(failed).toMatchObject({ name: 'TypeError', message: 'fetch failed' });
    expect((failed as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
    expect(attempts).toBe(3);
  });
});

describe('against the real service, over a link that loses the answer', () => {
  let service: TestService;
  let lossy: Server;
  beforeAll(async () => {
    service = await startService();
    // Forwards the request to the service, then drops the connection as the answer comes back:
    // the service acted, the client never hears of it.
    lossy = createTcpServer((client) => {
      const upstream = connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
      client.on('data', (data) => upstream.write(data));
      upstream.once('data', () => {
        client.destroy();
        upstream.destroy();
      });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => lossy.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => lossy.close(resolve));
    await service.close();
  });

  it('a broker check whose answer is lost is not sent again: one unit of budget, one call record', async () => {
    const world = await brokerWorld(service);
    const { leafId } = await chainOf(service, world, 1, { budget: { calls: 5, windowMs: 60_000 } });
    const broker = createClient({ baseUrl: `http://127.0.0.1:${(lossy.address() as AddressInfo).port}`, token: world.broker.token });
    let ran = false;
    const lost = broker.withCheck(
      { grantId: leafId, tool: 'repos.read_file', args: { path: 'a' }, subjectToken: world.agent.token },
      async () => {
        ran = true;
      },
    );
    await expect(lost).rejects.toThrow('fetch failed');
    await expect(lost).rejects.not.toBeInstanceOf(ApiProblem);
    expect(ran).toBe(false);

    const records = await callRecordsOf(service.deps.db, leafId);
    expect(records.map((r) => r.outcome)).toEqual(['pending']);
    // The check that went through next sees four units left, not one (three re-sends would have taken three more).
    const next = await service.http
      .post('/api/broker/check')
      .set(world.broker.auth)
      .send({ grantId: leafId, tool: 'repos.read_file', args: { path: 'b' }, subjectToken: world.agent.token })
      .expect(200);
    expect(next.body).toMatchObject({ decision: 'allow', budget: { remaining: 3 } });
  });
});
