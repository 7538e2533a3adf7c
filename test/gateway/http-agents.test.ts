import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { serveHttp } from '../../gateway/src/gateway';
import { human, installAgent, podWith } from '../support/world';
import {
  configFor,
  connectionFor,
  EVERYTHING,
  gatewayWorld,
  grantOn,
  httpAgent,
  names,
  startHttpGateway,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The gateway's HTTP door as an attacker meets it: no token, a bad token, a token that may not
 * read the grant, another agent's session id, a web page rebinding its name to 127.0.0.1. Each is
 * refused before any MCP message is read, and nothing reaches the upstream or the call trail.
 */
let world: GatewayWorld;
let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
let grantId: string;
let connectionId: string;
const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

beforeAll(async () => {
  world = await gatewayWorld();
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  connectionId = await connectionFor(world, config);
  grantId = await grantOn(world, connectionId, { tools: ['everything.echo'] });
  gateway = await startHttpGateway(world, config);
});
afterAll(async () => {
  await gateway.close();
  await world.service.close();
});

/** A raw POST /mcp; `endBody: false` leaves the body unfinished, so an answer proves it was never read. */
function post(headers: Record<string, string>, body = initialize, endBody = true, at = gateway.url) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const url = new URL(at);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: '/mcp',
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.write(body.slice(0, endBody ? undefined : 10));
    if (endBody) req.end();
  });
}

/** The status line of a POST /mcp written byte by byte on a socket, with this Authorization header. */
function rawStatus(authorization: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(gateway.url);
    const socket = connect(Number(url.port), url.hostname, () => {
      const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\nGrant-Id: ${grantId}\r\nContent-Length: 2\r\n\r\n{}`;
      socket.end(Buffer.from(head, 'latin1'));
    });
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

it('answers 401 to a missing or bad token before reading the body', async () => {
  const missing = await post({ 'Grant-Id': grantId }, initialize, false);
  expect(missing.status).toBe(401);
  // Where a host learns to get a token (CONTRACT §20); no error, as no token was sent.
  expect(missing.headers['www-authenticate']).toBe(
    `Bearer resource_metadata="${new URL(gateway.url).origin}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
  );
  expect(JSON.parse(missing.body)).toMatchObject({ status: 401, code: 'unauthorized' });
  const bad = await post({ Authorization: 'Bearer art_not-a-token', 'Grant-Id': grantId }, initialize, false);
  expect(bad.status).toBe(401);
  const basic = await post({ Authorization: `Basic ${Buffer.from('a:b').toString('base64')}`, 'Grant-Id': grantId }, '{garbage', true);
  expect(basic.status).toBe(401);
  // Bytes no HTTP client library would send (a Latin-1 byte, a tab, a very long token), written raw.
  for (const token of ['art_\u00e9x', 'art_a\tb', `art_${'x'.repeat(9000)}`]) expect(await rawStatus(`Bearer ${token}`)).toBe(401);
});

it('needs the grant as Grant-Id, and a token that may read it', async () => {
  expect((await post({ Authorization: `Bearer ${world.agent.token}` })).status).toBe(400);
  expect((await post({ Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': '../api/pods' })).status).toBe(400);
  // An agent of another pod: the grant is not one it may read, so it is not found.
  const stranger = human(world.service, 'stranger');
  const otherPod = await podWith(world.service, stranger);
  const outsider = await installAgent(world.service, stranger, otherPod, 'outsider');
  const foreign = await post({ Authorization: `Bearer ${outsider.token}`, 'Grant-Id': grantId }, initialize, false);
  expect(foreign.status).toBe(404);
  expect((await post({ Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab' })).status).toBe(404);
});

it("refuses another agent's session id, and an unknown one, as not found", async () => {
  const agent = await httpAgent(gateway.url, world.agent.token, grantId);
  const sessionId = (agent.transport as { sessionId?: string }).sessionId!;
  expect(sessionId).toBeTruthy();
  // A second agent of the same pod may use the grant, but not the first agent's session.
  const colleague = await installAgent(world.service, world.owner, world.podId, 'colleague');
  const listTools = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  const hijack = await post({ Authorization: `Bearer ${colleague.token}`, 'Grant-Id': grantId, 'Mcp-Session-Id': sessionId }, listTools);
  expect(hijack.status).toBe(404);
  const otherGrant = await grantOn(world, connectionId, { tools: ['everything.echo'] });
  const crossGrant = await post(
    { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': otherGrant, 'Mcp-Session-Id': sessionId },
    listTools,
  );
  expect(crossGrant.status).toBe(404);
  const unknown = await post(
    { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId, 'Mcp-Session-Id': 'no-such-session' },
    listTools,
  );
  expect(unknown.status).toBe(404);
  // The owner's own session still works.
  expect(names((await agent.listTools()).tools)).toEqual(['echo']);
  await agent.close();
});

it('refuses a Host or Origin that is not loopback (DNS rebinding), before the token is looked at', async () => {
  const auth = { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId };
  expect((await post({ ...auth, Host: 'evil.example.com' })).status).toBe(403);
  expect((await post({ ...auth, Origin: 'http://evil.example.com' })).status).toBe(403);
  expect((await post({ Host: 'evil.example.com' })).status).toBe(403);
  const allowed = await post({ ...auth, Origin: 'http://localhost:3000' });
  expect(allowed.status).toBe(200);
});

it("refuses a person's JWT, and a broker's token, as an agent's bearer: 401 before the body is read", async () => {
  // The pod's owner may read the grant, so only the kind of credential tells them apart.
  await world.service.http.get(`/api/grants/${grantId}`).set(world.owner.auth).expect(200);
  for (const token of [world.owner.token, world.brokerToken]) {
    const refused = await post({ Authorization: `Bearer ${token}`, 'Grant-Id': grantId }, initialize, false);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/^Bearer resource_metadata="[^"]+", scope="mcp", error="invalid_token"$/);
    expect(JSON.parse(refused.body)).toMatchObject({ status: 401, code: 'unauthorized' });
  }
  // An agent's runtime token still gets in.
  expect((await post({ Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId })).status).toBe(200);
});

describe('a listener on an address that is not loopback answers only to its allowed names', () => {
  // The machine's own network address when it has one (else another loopback address, which the
  // gateway does not count among the loopback names): reachable by name from elsewhere.
  const address =
    Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry && entry.family === 'IPv4' && !entry.internal)?.address ?? '127.0.0.2';
  const auth = () => ({ Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId });

  it('by default the listen address: a foreign Host or Origin is a 403, before the token is looked at', async () => {
    const listener = await serveHttp(gateway.core, { port: 0, host: address });
    try {
      const url = listener.url();
      expect((await post(auth(), initialize, true, url)).status).toBe(200);
      expect((await post({ ...auth(), Origin: `http://${address}:8080` }, initialize, true, url)).status).toBe(200);
      const foreign: Array<Record<string, string>> = [
        { Host: 'evil.example.com' },
        { Origin: 'http://evil.example.com' },
        { Host: 'localhost' },
        { Origin: 'null' },
      ];
      for (const headers of foreign) {
        const refused = await post({ ...auth(), ...headers }, initialize, false, url);
        expect({ headers, status: refused.status }).toEqual({ headers, status: 403 });
        expect(JSON.parse(refused.body)).toMatchObject({ code: 'host_not_allowed' });
      }
    } finally {
      await listener.close();
    }
  });

  it('behind a proxy on every interface: the publicUrl host and allowedHosts, nothing else', async () => {
    const listener = await serveHttp(gateway.core, {
      port: 0,
      host: '0.0.0.0',
      publicUrl: 'https://gateway.example.test/mcp',
      allowedHosts: ['gw.internal.test'],
    });
    try {
      const url = `http://127.0.0.1:${new URL(listener.url()).port}/mcp`;
      for (const host of ['gateway.example.test', 'gw.internal.test']) {
        expect((await post({ ...auth(), Host: host, Origin: `https://${host}` }, initialize, true, url)).status).toBe(200);
      }
      const foreign: Array<Record<string, string>> = [
        { Host: '127.0.0.1' },
        { Host: 'evil.example.com' },
        { Host: 'gateway.example.test', Origin: 'https://evil.example.com' },
      ];
      for (const headers of foreign) expect((await post({ ...auth(), ...headers }, initialize, false, url)).status).toBe(403);
    } finally {
      await listener.close();
    }
  });
});

it('answers 404 off /mcp and 405 to other methods', async () => {
  const answer = await fetch(gateway.url.replace('/mcp', '/other'), { method: 'POST' });
  expect(answer.status).toBe(404);
  expect((await fetch(gateway.url, { method: 'PUT' })).status).toBe(405);
});
