import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiProblem, createClient } from '@grant-broker/client';
import { keptAliveFetch } from '../../gateway/src/broker-transport';

/**
 * The gateway's transport to the grant broker hands the typed client answers it has read whole, not
 * platform Responses: a JSON body, a problem document, an empty answer and a header each come
 * through as the client reads them. A hand-written server plays the grant broker.
 */
let server: Server;
let base: string;
const transport = keptAliveFetch();
const seen: { method?: string; body: string; authorization?: string }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      seen.push({ method: request.method, body, authorization: request.headers.authorization });
      if (request.url === '/api/broker/check') {
        response.writeHead(200, { 'content-type': 'application/json' });
        return void response.end(JSON.stringify({ decision: 'allow', callId: 'call_1', grantVersion: '3' }));
      }
      if (request.url === '/api/grants/grt_gone') {
        response.writeHead(404, { 'content-type': 'application/problem+json', 'retry-after': '7' });
        return void response.end(JSON.stringify({ code: 'not_found', detail: 'no such grant', status: 404 }));
      }
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await transport.close();
  await new Promise((resolve) => server.close(resolve));
});

it('hands the typed client a JSON answer, a problem, an empty answer and their headers', async () => {
  const client = createClient({ baseUrl: base, token: 'bkt_test', fetch: transport.fetch, Request: transport.Request, retries: 0 });
  const check = await client.unwrap(
    client.api.POST('/api/broker/check', { body: { grantId: 'grt_1', tool: 't.x', args: { a: 1 }, subjectToken: 'art_x' } }),
  );
  expect(check).toMatchObject({ decision: 'allow', callId: 'call_1', grantVersion: '3' });
  expect(seen.at(-1)).toEqual({
    method: 'POST',
    body: JSON.stringify({ grantId: 'grt_1', tool: 't.x', args: { a: 1 }, subjectToken: 'art_x' }),
    authorization: 'Bearer bkt_test',
  });

  const missing = await client.api.GET('/api/grants/{grantId}', { params: { path: { grantId: 'grt_gone' } } });
  expect(missing.response.status).toBe(404);
  expect(missing.response.headers.get('retry-after')).toBe('7');
  await expect(client.unwrap(Promise.resolve(missing))).rejects.toEqual(expect.any(ApiProblem));
  await expect(client.unwrap(Promise.resolve(missing))).rejects.toMatchObject({ status: 404, code: 'not_found' });

  const empty = await transport.fetch(`${base}/nothing`, { method: 'DELETE' });
  expect(empty.status).toBe(204);
  expect(await empty.text()).toBe('');
});
