import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectionTools, parseConfig } from '../../gateway/src/config';
import { createGatewayCore, serveHttp } from '../../gateway/src/gateway';
import { githubToolMappings } from '../../gateway/src/github/tools';
import type { HttpListener } from '../../gateway/src/http-listener';
import { credentialWorld, type CredentialWorld } from '../credentials-minting/world';
import { installAgent, type InstalledAgent } from '../support/world';
import { call, httpAgent, text, trail } from './support/gateway-world';

/**
 * The built-in GitHub connector with minted credentials (`credential: true`): the gateway holds no
 * token of its own; each check mints (or reuses) an installation token for exactly the call's
 * repository and the tool's permissions, from a local GitHub held to GitHub's own contract, and
 * the call goes to the code host with that token. The agent never sees one.
 */
const PERMISSIONS: Record<string, Record<string, 'read' | 'write'>> = {
  'repos.read_file': { contents: 'read' },
  'pulls.list': { pull_requests: 'read' },
  'issues.create_comment': { issues: 'write' },
};
let world: CredentialWorld;
let agent: InstalledAgent;
let codeHost: { url: string; seen: Array<{ path: string; token: string }>; server: Server };
let listener: HttpListener;
let session: Client;
let grantId: string;

/** A code host that takes only tokens the local GitHub minted, and records which one each request brought. */
async function startCodeHost() {
  const seen: Array<{ path: string; token: string }> = [];
  const server = createServer((req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const url = new URL(req.url ?? '/', 'http://code-host');
    seen.push({ path: `${req.method} ${url.pathname}`, token });
    const known = world.github.issued.some((issued) => issued.token === token);
    res.writeHead(known ? (req.method === 'POST' ? 201 : 200) : 401, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(known ? { path: url.pathname, content: 'from the code host' } : { code: 'bad_credentials' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

beforeAll(async () => {
  world = await credentialWorld();
  agent = await installAgent(world.service, world.alice, world.podId, 'coder');
  codeHost = await startCodeHost();
  const tools = Object.fromEntries(
    Object.entries(githubToolMappings()).map(([name, mapping]) => [name, { ...mapping, permissions: PERMISSIONS[name] }]),
  );
  const config = parseConfig({
    brokerUrl: world.service.baseUrl,
    brokerTokenEnv: 'GATEWAY_BROKER_TOKEN',
    upstream: { builtin: 'github', apiUrl: codeHost.url, credential: true },
    tools,
  });
  const connection = await world.service.http
    .post('/api/connections')
    .set(world.alice.auth)
    .send({
      kind: 'code_hosting_app',
      brokerId: world.broker.id,
      externalInstallationId: world.installations.acme,
      app: 'acme',
      tools: connectionTools(config),
    })
    .expect(201);
  const grant = await world.service.http
    .post('/api/grants')
    .set(world.alice.auth)
    .send({
      connectionId: connection.body.id,
      target: { kind: 'pod', id: world.podId },
      tools: ['repos.read_file', 'issues.create_comment'],
      writeMode: 'write',
      resources: { repositories: ['acme/*'] },
    })
    .expect(201);
  grantId = grant.body.id;
  // No GITHUB_TOKEN: with minted credentials the gateway needs none.
  listener = await serveHttp(createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: world.broker.token } }), {
    port: 0,
    host: '127.0.0.1',
  });
  session = await httpAgent(listener.url(), agent.token, grantId);
});
afterAll(async () => {
  await session?.close();
  await listener?.close();
  await new Promise((resolve) => codeHost?.server.close(resolve));
  await world.close();
});

const fingerprint = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
const mintedFor = (token: string) => world.github.issued.find((issued) => issued.token === token)!.body;

it('sends each call with a token minted for exactly its repository and tool, and never shows it to the agent', async () => {
  const read = await call(session, 'repos.read_file', { repository: 'acme/api', path: 'README.md' });
  expect(read.isError).toBeFalsy();
  const readToken = codeHost.seen.at(-1)!.token;
  expect(mintedFor(readToken)).toEqual({ repositories: ['api'], permissions: { contents: 'read' } });

  const comment = await call(session, 'issues.create_comment', { repository: 'acme/api', issue: 7, body: 'LGTM' });
  expect(comment.isError).toBeFalsy();
  const commentToken = codeHost.seen.at(-1)!.token;
  expect(commentToken).not.toBe(readToken);
  expect(mintedFor(commentToken)).toEqual({ repositories: ['api'], permissions: { issues: 'write' } });

  const other = await call(session, 'repos.read_file', { repository: 'acme/web', path: 'a.md' });
  expect(other.isError).toBeFalsy();
  expect(mintedFor(codeHost.seen.at(-1)!.token)).toEqual({ repositories: ['web'], permissions: { contents: 'read' } });

  // The same repository and tool again: the token is reused, GitHub is not asked again.
  const minted = world.github.issued.length;
  await call(session, 'repos.read_file', { repository: 'acme/api', path: 'docs/x.md' });
  expect(codeHost.seen.at(-1)!.token).toBe(readToken);
  expect(world.github.issued).toHaveLength(minted);

  // No agent-visible answer carries a token.
  for (const answer of [read, comment, other])
    for (const { token } of world.github.issued) expect(JSON.stringify(answer)).not.toContain(token);
  expect(world.github.rejected).toEqual([]);

  // The call trail names the token each call received, by fingerprint.
  const { items } = await trail({ service: world.service, owner: world.alice }, grantId);
  expect(items.map((item) => (item as unknown as { credential: { fingerprint: string } | null }).credential?.fingerprint)).toEqual([
    fingerprint(readToken),
    fingerprint(commentToken),
    expect.stringMatching(/^sha256:[0-9a-f]{16}$/),
    fingerprint(readToken),
  ]);
});

it('mints nothing and sends nothing for a call the check refuses', async () => {
  const [minted, sent] = [world.github.issued.length, codeHost.seen.length];
  const refused = await call(session, 'repos.read_file', { repository: 'other-org/secret', path: 'keys.txt' });
  expect(refused).toMatchObject({ isError: true, structuredContent: { reason: 'resource_not_allowed' } });
  expect(text(refused)).not.toMatch(/ghs_/);
  expect(world.github.issued).toHaveLength(minted);
  expect(codeHost.seen).toHaveLength(sent);
});
