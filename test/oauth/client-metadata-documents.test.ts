import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { registerGatewayResource } from '../../src/oauth/resources';
import { grantWorld, type GrantWorld } from '../support/grant-world';
import { CookieJar, startOAuthService } from '../support/oauth';
import type { TestService } from '../support/service';

/**
 * Client ID Metadata Documents as an attacker would serve them (CONTRACT §20): a client id whose
 * document sits on a loopback name, one that answers 50 MB, one that never finishes, and one
 * whose redirect URIs do not include the one asked for. Each is refused before anything is
 * stored: no authorization, no interaction, no row in `oauth_state`. A deployment that allows
 * private addresses (development) fetches the same document and goes on to consent, which shows
 * the refusals above are the guard's and the bounds', not a fetcher that never works.
 */
jest.setTimeout(60_000);

const REDIRECT = 'http://127.0.0.1:9/callback';
const FIFTY_MB = 50 * 1024 * 1024;

let guarded: TestService;
let open: TestService;
let world: GrantWorld;
let documents: Server;
let origin: string;
const hits: string[] = [];
const sent = { bytes: 0 };

function selfSignedLocalhost(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cimd-tls-'));
  execFileSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  ); // prettier-ignore
  return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
}

/** 50 MB of a JSON string, written only as fast as the reader takes it: what was sent is what was read (plus socket buffers). */
function flood(response: ServerResponse): void {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  response.writeHead(200, { 'content-type': 'application/json' });
  response.write('{"client_name":"');
  const more = () => {
    while (sent.bytes < FIFTY_MB) {
      sent.bytes += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', more);
    }
    response.end('"}');
  };
  response.on('error', () => undefined);
  more();
}

beforeAll(async () => {
  const tls = selfSignedLocalhost();
  documents = createServer(tls, (request, response) => {
    const url = request.url ?? '/';
    hits.push(url);
    const clientId = `${origin}${url}`;
    if (url === '/huge.json') return flood(response);
    // Headers at once, the body never: only the fetch's own time bound ends it.
    if (url === '/slow.json') return void response.writeHead(200, { 'content-type': 'application/json' }).write('{');
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        client_id: clientId,
        client_name: 'Document Host',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    );
  });
  await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
  // `localhost` resolves to loopback: refused by the address guard when the connection is made, not by the URL's text.
  origin = `https://localhost:${(documents.address() as AddressInfo).port}`;

  guarded = await startOAuthService({}, { clientMetadataCa: tls.cert });
  open = await startOAuthService({ OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: 'true' }, { clientMetadataCa: tls.cert });
  world = await grantWorld(open);
  // Both services share the database: one registration serves both.
  await registerGatewayResource(open.deps.db, world.brokerId, resourceOf(world));
});
afterAll(async () => {
  documents?.closeAllConnections();
  await new Promise((resolve) => documents?.close(resolve));
  await guarded?.close();
  await open?.close();
});

const resourceOf = (of: GrantWorld) => `https://gateway-${of.brokerId.slice(-8).toLowerCase()}.example.test/mcp`;

/** An authorization request as a host's browser sends it, for a client id that is a document's URL. */
function authorize(service: TestService, clientId: string, params: Record<string, string> = {}) {
  const url = new URL(`${service.baseUrl}/oauth/authorize`);
  const all = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: 'x'.repeat(43),
    code_challenge_method: 'S256',
    resource: resourceOf(world),
    scope: 'mcp',
    state: 's',
    ...params,
  };
  for (const [key, value] of Object.entries(all)) url.searchParams.set(key, value);
  return new CookieJar().fetch(url.href);
}

const errorOf = async (response: Response) => {
  const location = response.headers.get('location');
  if (location) return new URL(location, 'http://x').searchParams.get('error');
  return ((await response.json()) as { error: string }).error;
};

/** Rows the authorization server stored for this client: interactions, codes, tokens, grants, sessions. */
const storedFor = async (service: TestService, clientId: string) =>
  Number(
    (
      await service.deps
        .db('oauth_state')
        .whereRaw("payload->>'clientId' = ? or payload->>'client_id' = ? or payload->'params'->>'client_id' = ?", [
          clientId,
          clientId,
          clientId,
        ])
        .count<{ count: string }[]>('* as count')
    )[0]!.count,
  );

describe('client metadata documents (CONTRACT §20)', () => {
  it('a document on a loopback name is refused without a request reaching it, unless private addresses are allowed', async () => {
    const clientId = `${origin}/loopback.json`;
    const refused = await authorize(guarded, clientId);
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toBe('invalid_client');
    expect(hits).not.toContain('/loopback.json');
    expect(await storedFor(guarded, clientId)).toBe(0);

    // Allowed (development): the same document is fetched and the person is sent to the consent page.
    const allowed = await authorize(open, clientId);
    expect(allowed.status).toBe(303);
    expect(allowed.headers.get('location')).toMatch(/\/oauth\/consent\/[A-Za-z0-9_-]+$/);
    expect(hits).toContain('/loopback.json');
  });

  it('a document that answers 50 MB is refused, having read a bounded number of bytes', async () => {
    const clientId = `${origin}/huge.json`;
    const heapBefore = process.memoryUsage().heapUsed;
    const refused = await authorize(open, clientId);
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toBe('invalid_client');
    // The fetch stopped reading past its bound: what left the server is that bound plus what socket buffers held.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sent.bytes).toBeLessThan(8 * 1024 * 1024);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(FIFTY_MB / 2);
    expect(await storedFor(open, clientId)).toBe(0);
    expect(hits.filter((hit) => hit === '/huge.json')).toHaveLength(1);
  });

  it('a document that never finishes is refused within the fetch time bound', async () => {
    const clientId = `${origin}/slow.json`;
    const started = Date.now();
    const refused = await authorize(open, clientId);
    const took = Date.now() - started;
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toBe('invalid_client');
    // Fetched once: the error page's second look at the client does not wait for it again.
    expect(hits.filter((hit) => hit === '/slow.json')).toHaveLength(1);
    // The bound is 2.5 s; the margin is for a loaded machine, never the minutes a hanging peer could take.
    expect(took).toBeGreaterThanOrEqual(2_000);
    expect(took).toBeLessThan(5_000);
    expect(await storedFor(open, clientId)).toBe(0);

    // Asked again at once: refused from memory, without another fetch or another wait.
    const again = Date.now();
    expect(await errorOf(await authorize(open, clientId))).toBe('invalid_client');
    expect(Date.now() - again).toBeLessThan(1_000);
    expect(hits.filter((hit) => hit === '/slow.json')).toHaveLength(1);
  });

  it('a redirect URI the document does not list is refused without a redirect and nothing is stored', async () => {
    const clientId = `${origin}/listed.json`;
    const refused = await authorize(open, clientId, { redirect_uri: 'http://127.0.0.1:9/elsewhere' });
    expect(refused.headers.get('location')).toBeNull();
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toBe('invalid_redirect_uri');
    expect(await storedFor(open, clientId)).toBe(0);
    // The same document with the URI it lists goes on to consent.
    expect((await authorize(open, clientId)).status).toBe(303);
  });
});
