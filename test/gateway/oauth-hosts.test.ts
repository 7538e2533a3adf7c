import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  discoverAuthorizationServerMetadata,
  refreshAuthorization,
  UnauthorizedError,
  type OAuthClientProvider,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationFull, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createGatewayCore, serveHttp } from '../../gateway/src/gateway';
import { jose } from '../../src/oauth/provider-module';
import { registerGatewayResource } from '../../src/oauth/resources';
import { currentSigningKeys } from '../../src/oauth/signing-keys';
import { startOAuthService, throughConsent, type ConsentDetails } from '../support/oauth';
import type { TestService } from '../support/service';
import { broker, human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';
import {
  call,
  configFor,
  connectionFor,
  EVERYTHING,
  grantOn,
  httpAgent,
  names,
  text,
  trail,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * An MCP host that knows only the gateway's URL (CONTRACT §20): the official SDK's client with its
 * own OAuthClientProvider, discovering from a 401, registering, sending a person through consent
 * and calling tools on the child grant the consent made. Then the attacks, each refused.
 */
const REDIRECT = 'http://127.0.0.1:9/callback';

let service: TestService;
let world: GatewayWorld;
let rootId: string;
let connectionId: string;
let gateway: Awaited<ReturnType<typeof startGateway>>;
let replica: Awaited<ReturnType<typeof startGateway>>;

/** A host's OAuth state, kept in memory, as an MCP host keeps it in its own store. */
class TestHost implements OAuthClientProvider {
  private information?: OAuthClientInformationFull;
  private saved?: OAuthTokens;
  private verifier?: string;
  authorizationUrl?: URL;
  constructor(private readonly name: string) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationFull) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier!;
  }
}

async function startGateway(publicUrl?: string) {
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: {
      echo: { grantTool: 'everything.echo', access: 'read' },
      'get-sum': { grantTool: 'everything.sum', access: 'read' },
    },
  });
  const core = createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: world.brokerToken } });
  const listener = await serveHttp(core, { port: 0, host: '127.0.0.1', ...(publicUrl ? { publicUrl } : {}) });
  return {
    config,
    listener,
    url: listener.url(),
    close: async () => {
      await listener.close();
      await core.upstream.close();
      await core.close();
    },
  };
}

beforeAll(async () => {
  service = await startOAuthService();
  const owner: Human = human(service, 'owner');
  const podId = await podWith(service, owner);
  const agent: InstalledAgent = await installAgent(service, owner, podId, 'coder');
  const registered = await broker(service, 'mcp-gateway');
  world = { service, owner, podId, agent, brokerId: registered.id, brokerToken: registered.token };
  gateway = await startGateway();
  // A second replica of the same gateway (one resource URI, its own memory).
  replica = await startGateway(gateway.url);
  connectionId = await connectionFor(world, gateway.config);
  rootId = await grantOn(world, connectionId, { tools: ['everything.echo', 'everything.sum'] });
  await registerGatewayResource(service.deps.db, world.brokerId, gateway.listener.resource());
});
afterAll(async () => {
  await replica?.close();
  await gateway?.close();
  await service?.close();
});

const allowEcho = (details: ConsentDetails) => ({
  decision: 'allow',
  agentId: world.agent.agentId,
  grantId: details.pods[0]!.agents[0]!.grants[0]!.id,
  tools: ['everything.echo'],
});

/** The host connects knowing the gateway's URL alone: a 401, the person's consent, then a session on the child grant. */
async function connectHost(host: TestHost, url = gateway.url) {
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: host });
  await expect(new Client({ name: 'host', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
  const walked = await throughConsent(service.baseUrl, host.authorizationUrl!.href, world.owner.token, allowEcho);
  await first.finishAuth(walked.redirect!.searchParams.get('code')!);
  const client = new Client({ name: 'host', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: host }));
  return { client, childId: String(walked.decision!.body.grantId) };
}

/**
 * The SDK's transport, watched (not replaced): a request it handled went through its `handleRequest`,
 * one the gateway's hot path answered (./gateway/src/hot-path.ts) did not.
 */
const sdkTransport = jest.spyOn(StreamableHTTPServerTransport.prototype, 'handleRequest');

/** A raw POST /mcp to a gateway; `viaSdk`: the SDK's transport took part in the answer. */
function post(url: string, headers: Record<string, string>, body: unknown) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string; viaSdk: boolean }>((resolve, reject) => {
    const target = new URL(url);
    const probe = randomUUID();
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: '/mcp',
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Test-Probe': probe, ...headers },
      },
      (res) => {
        let answer = '';
        res.on('data', (chunk: Buffer) => (answer += chunk.toString()));
        res.on('end', () => {
          const viaSdk = sdkTransport.mock.calls.some(([request]) => request.headers['test-probe'] === probe);
          resolve({ status: res.statusCode!, headers: res.headers, body: answer, viaSdk });
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const echoCall = (id = 2) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } });

/** A session opened with this bearer: its id. */
async function sessionWith(url: string, headers: Record<string, string>) {
  const opened = await post(url, headers, initialize);
  expect(opened.status).toBe(200);
  const sessionId = opened.headers['mcp-session-id'] as string;
  await post(url, { ...headers, 'Mcp-Session-Id': sessionId }, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return sessionId;
}

/** An access token signed with the authorization server's own key (or another), with these claims changed. */
async function signed(claims: Record<string, unknown>, key?: Parameters<InstanceType<ReturnType<typeof jose>['SignJWT']>['sign']>[0]) {
  const { SignJWT, importJWK } = jose();
  const [jwk] = await currentSigningKeys(
    service.deps.db,
    service.deps.keyRing,
    { rotateAfterMs: 365 * 86_400_000, keepPrevious: 100 },
    Date.now(),
  );
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ client_id: 'forged', scope: 'mcp', agent_id: world.agent.agentId, sub: rootId, ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: jwk!.kid })
    .setIssuer((claims.iss as string | undefined) ?? service.baseUrl)
    .setAudience((claims.aud as string | undefined) ?? gateway.listener.resource())
    .setIssuedAt(now)
    .setExpirationTime((claims.exp as number | undefined) ?? now + 300)
    .sign(key ?? (await importJWK(jwk as never, 'ES256')));
}

describe('an MCP host that knows only the gateway URL (CONTRACT §20)', () => {
  it('publishes its protected resource metadata at both well-known paths, naming the grant broker as its authorization server', async () => {
    const origin = new URL(gateway.url).origin;
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const answer = await fetch(`${origin}${path}`);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({
        resource: `${origin}/mcp`,
        authorization_servers: [service.baseUrl],
        scopes_supported: ['mcp'],
        bearer_methods_supported: ['header'],
        resource_name: 'MCP gateway',
      });
    }
    const challenge = await post(gateway.url, {}, initialize);
    expect(challenge.status).toBe(401);
    expect(challenge.headers['www-authenticate']).toBe(
      `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
    );
  });

  it('discovers, registers, goes through consent and calls tools on the child grant; tools/list follows it', async () => {
    const host = new TestHost('Test Host');
    const { client, childId } = await connectHost(host);
    // The consent narrowed the grant to echo: get-sum is the root grant's, not the host's.
    expect(names((await client.listTools()).tools)).toEqual(['echo']);
    expect(text(await call(client, 'echo', { message: 'over oauth' }))).toMatch(/over oauth/);
    const refused = await call(client, 'get-sum', { a: 1, b: 2 });
    expect(refused.isError).toBe(true);
    const { items } = await trail(world, childId);
    // Checked on the child grant, as the host's agent: echo allowed, get-sum denied by the check (never sent).
    expect(items.map((item) => `${item.tool}:${item.outcome}`)).toEqual(['everything.echo:succeeded', 'everything.sum:denied']);

    // The host refreshes its token (rotation): the new one carries on in the same session.
    const sessionId = (client.transport as { sessionId?: string }).sessionId;
    const before = host.tokens()!;
    const refreshed = await refreshAuthorization(service.baseUrl, {
      metadata: (await discoverAuthorizationServerMetadata(service.baseUrl))!,
      clientInformation: host.clientInformation()!,
      refreshToken: before.refresh_token!,
      resource: new URL(gateway.listener.resource()),
    });
    expect(refreshed.access_token).not.toBe(before.access_token);
    host.saveTokens(refreshed);
    expect(text(await call(client, 'echo', { message: 'after refresh' }))).toMatch(/after refresh/);
    expect((client.transport as { sessionId?: string }).sessionId).toBe(sessionId);
    await client.close();
  });

  it('a runtime token with Grant-Id still works beside it', async () => {
    const agent = await httpAgent(gateway.url, world.agent.token, rootId);
    expect(names((await agent.listTools()).tools)).toEqual(['echo', 'get-sum']);
    expect(text(await call(agent, 'get-sum', { a: 2, b: 3 }))).toMatch(/5/);
    await agent.close();
  });

  it('revoking the child grant ends the host at its next request, on every replica', async () => {
    const host = new TestHost('Revoked Host');
    const { client, childId } = await connectHost(host);
    const token = host.tokens()!.access_token;
    const bearer = { Authorization: `Bearer ${token}` };
    const onReplica = await sessionWith(replica.url, bearer);
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    const allowed = await post(gateway.url, { ...bearer, 'Mcp-Session-Id': sessionId }, echoCall());
    expect([allowed.status, allowed.viaSdk]).toEqual([200, false]);
    // A second token of the host's on the same grant (as after a refresh), its grant read by the door too.
    const second = { Authorization: `Bearer ${await signed({ sub: childId, jti: 'second' })}`, 'Mcp-Session-Id': sessionId };
    expect((await post(gateway.url, second, echoCall(6))).status).toBe(200);

    await service.http.post(`/api/grants/${childId}/revoke`).set(world.owner.auth).send({}).expect(200);
    // The very next call (the door still remembers the token): the check refuses the grant, the answer is a 401, from the hot path.
    const next = await post(gateway.url, { ...bearer, 'Mcp-Session-Id': sessionId }, echoCall(3));
    expect([next.status, next.viaSdk]).toEqual([401, false]);
    expect(next.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    expect(JSON.parse(next.body)).toMatchObject({ status: 401, code: 'unauthorized' });
    // The same call in a batch, with the second token (still remembered): the SDK's transport gives the very same answer.
    const viaSdk = await post(gateway.url, second, [echoCall(3)]);
    expect([viaSdk.status, viaSdk.viaSdk]).toEqual([401, true]);
    const { date: _hotDate, ...hotHeaders } = next.headers;
    const { date: _sdkDate, ...sdkHeaders } = viaSdk.headers;
    expect(hotHeaders).toEqual(sdkHeaders);
    expect(next.body).toBe(viaSdk.body);
    // Anything after it, a call or not, on either replica.
    expect((await post(gateway.url, { ...bearer, 'Mcp-Session-Id': sessionId }, { jsonrpc: '2.0', id: 4, method: 'ping' })).status).toBe(
      401,
    );
    expect((await post(replica.url, { ...bearer, 'Mcp-Session-Id': onReplica }, echoCall(5))).status).toBe(401);
    expect((await post(replica.url, bearer, initialize)).status).toBe(401);
    // The SDK's client, told 401, cannot refresh its way back in: the grant is gone.
    await expect(call(client, 'echo', { message: 'again' })).rejects.toThrow();
    const { outcomes } = await trail(world, childId);
    expect(outcomes.filter((outcome) => outcome.endsWith(':succeeded'))).toHaveLength(2);
    await client.close();
  });
});

describe('attacks on the door, each refused', () => {
  it('a token for another resource, an expired one, one signed by another key, one without the mcp scope: 401 invalid_token', async () => {
    const good = await signed({});
    expect((await post(gateway.url, { Authorization: `Bearer ${good}` }, initialize)).status).toBe(200);
    const { generateKeyPair } = jose();
    const stranger = (await generateKeyPair('ES256')).privateKey;
    const bad = {
      audience: await signed({ aud: 'https://elsewhere.example.test/mcp' }),
      expired: await signed({ exp: Math.floor(Date.now() / 1000) - 60 }),
      foreignKey: await signed({}, stranger),
      noScope: await signed({ scope: 'openid' }),
      otherIssuer: await signed({ iss: 'https://idp.example.test' }),
      // The same claims, unsigned (alg none).
      unsigned: `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${good.split('.')[1]}.`,
    };
    for (const [what, token] of Object.entries(bad)) {
      const answer = await post(gateway.url, { Authorization: `Bearer ${token}` }, initialize);
      expect([what, answer.status]).toEqual([what, 401]);
      expect(answer.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    }
  });

  it("a Grant-Id that disagrees with the token's grant: 400 at the gateway and at ext_authz; the check refuses the token for it", async () => {
    const token = await signed({});
    const mismatch = await post(
      gateway.url,
      { Authorization: `Bearer ${token}`, 'Grant-Id': 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab' },
      initialize,
    );
    expect(mismatch.status).toBe(400);
    expect(JSON.parse(mismatch.body)).toMatchObject({ code: 'grant_mismatch' });
    expect((await post(gateway.url, { Authorization: `Bearer ${token}`, 'Grant-Id': rootId }, initialize)).status).toBe(200);

    // ext_authz: the grant comes from the token; a grant-id header naming another is refused.
    const host = new TestHost('Envoy Host');
    const { client, childId } = await connectHost(host);
    await client.close();
    const access = host.tokens()!.access_token;
    const brokerAuth = { 'x-broker-authorization': `Bearer ${world.brokerToken}` };
    await service.http
      .put(`/api/brokers/${world.brokerId}/routes`)
      .set({ Authorization: `Bearer ${world.brokerToken}` })
      .send({ routes: [{ method: 'POST', path: '/mcp', mcp: true }] })
      .expect(200);
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'everything.echo', arguments: { message: 'x' } } };
    const envoy = (headers: Record<string, string>) =>
      service.http
        .post('/ext-authz/mcp')
        .set({ ...brokerAuth, authorization: `Bearer ${access}`, ...headers })
        .set('content-type', 'application/json')
        .send(JSON.stringify(message));
    const fromToken = await envoy({});
    expect(fromToken.status).toBe(200);
    expect(fromToken.headers['x-grant-call-id']).toMatch(/^call_/);
    const other = await envoy({ 'grant-id': rootId });
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({ code: 'grant_mismatch' });
    expect((await envoy({ 'grant-id': childId })).status).toBe(200);
    // The check itself: the token is nobody on another grant, even one of the same tree.
    const direct = await service.http
      .post('/api/broker/check')
      .set({ Authorization: `Bearer ${world.brokerToken}` })
      .send({ grantId: rootId, tool: 'everything.echo', subjectToken: access, args: { message: 'x' } });
    expect(direct.status).toBe(401);
    expect(direct.body.code).toBe('subject_token_invalid');
    // And reads nothing but its own grant.
    await service.http
      .get(`/api/grants/${childId}`)
      .set({ Authorization: `Bearer ${access}` })
      .expect(200);
    await service.http
      .get(`/api/grants/${rootId}`)
      .set({ Authorization: `Bearer ${access}` })
      .expect(404);
    await service.http
      .get(`/api/pods/${world.podId}/grants`)
      .set({ Authorization: `Bearer ${access}` })
      .expect(401);
  });

  it("fails closed while the broker's authorization server cannot be read: metadata and access tokens get a 503", async () => {
    const config = { ...gateway.config, brokerUrl: 'http://127.0.0.1:9' };
    const core = createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: world.brokerToken } });
    const blind = await serveHttp(core, { port: 0, host: '127.0.0.1' });
    try {
      const origin = new URL(blind.url()).origin;
      expect((await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`)).status).toBe(503);
      const answer = await post(blind.url(), { Authorization: `Bearer ${await signed({})}` }, initialize);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'authorization_server_unavailable' });
      // Still a 401 that says where to go, for a request without a token.
      expect((await post(blind.url(), {}, initialize)).status).toBe(401);
    } finally {
      await blind.close();
      await core.upstream.close();
      await core.close();
    }
  });

  it('Mcp-Method or Mcp-Name headers that disagree with the body: 400; agreeing ones change nothing', async () => {
    const bearer = { Authorization: `Bearer ${await signed({})}` };
    const sessionId = await sessionWith(gateway.url, bearer);
    const on = { ...bearer, 'Mcp-Session-Id': sessionId };
    const lying = await post(gateway.url, { ...on, 'Mcp-Method': 'tools/list' }, echoCall());
    expect([lying.status, lying.viaSdk]).toEqual([400, false]);
    expect(JSON.parse(lying.body)).toMatchObject({ code: 'header_mismatch' });
    for (const hostile of [{ 'Mcp-Name': 'get-sum' }, { 'Mcp-Name': '' }, { 'Mcp-Name': 'echo, echo' }, { 'Mcp-Name': '\u00e9cho' }]) {
      const refused = await post(gateway.url, { ...on, 'Mcp-Method': 'tools/call', ...hostile }, echoCall());
      expect([hostile, refused.status, refused.viaSdk]).toEqual([hostile, 400, false]);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'header_mismatch' });
    }
    const named = { ...on, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'echo' };
    const honest = await post(gateway.url, named, echoCall());
    expect([honest.status, honest.viaSdk]).toEqual([200, false]);
    expect(honest.body).toMatch(/hi/);
    // Exactly what the SDK's transport answers to the same call (a batch of one is its to answer).
    const fromSdk = await post(gateway.url, named, [echoCall()]);
    expect([fromSdk.status, fromSdk.viaSdk]).toEqual([200, true]);
    expect(JSON.parse(honest.body)).toEqual(JSON.parse(fromSdk.body));
    expect(honest.headers['mcp-session-id']).toBe(fromSdk.headers['mcp-session-id']);
    // Without the headers: the hot path too.
    const plain = await post(gateway.url, on, { jsonrpc: '2.0', id: 9, method: 'tools/list' });
    expect([plain.status, plain.viaSdk]).toEqual([200, false]);
    expect(JSON.parse(plain.body)).toMatchObject({ id: 9, result: { tools: [{ name: 'echo' }, { name: 'get-sum' }] } });
  });

  it("a session opened over OAuth is the token's agent's on its grant: anyone else's bearer on it is a 404", async () => {
    const bearer = { Authorization: `Bearer ${await signed({})}` };
    const sessionId = await sessionWith(gateway.url, bearer);
    // Another token of the same agent and grant (the host refreshed) keeps the session.
    const refreshed = { Authorization: `Bearer ${await signed({ jti: 'second' })}` };
    const kept = await post(gateway.url, { ...refreshed, 'Mcp-Session-Id': sessionId }, echoCall());
    expect([kept.status, kept.viaSdk]).toEqual([200, false]);
    // The same agent's token for another of its grants: someone else's session, and a Grant-Id naming another grant is refused at the door.
    const otherGrant = await grantOn(world, connectionId, { tools: ['everything.echo'] });
    const forOther = await post(
      gateway.url,
      { Authorization: `Bearer ${await signed({ sub: otherGrant })}`, 'Mcp-Session-Id': sessionId },
      echoCall(),
    );
    expect([forOther.status, forOther.viaSdk]).toEqual([404, false]);
    const naming = await post(gateway.url, { ...refreshed, 'Grant-Id': otherGrant, 'Mcp-Session-Id': sessionId }, echoCall());
    expect([naming.status, naming.viaSdk]).toEqual([400, false]);
    expect(JSON.parse(naming.body)).toMatchObject({ code: 'grant_mismatch' });
    // The same agent's runtime token, and another agent's access token, are someone else.
    const runtime = { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': rootId };
    expect((await post(gateway.url, { ...runtime, 'Mcp-Session-Id': sessionId }, echoCall())).status).toBe(404);
    const colleague = await installAgent(service, world.owner, world.podId, 'colleague');
    const theirs = { Authorization: `Bearer ${await signed({ agent_id: colleague.agentId })}` };
    expect((await post(gateway.url, { ...theirs, 'Mcp-Session-Id': sessionId }, echoCall())).status).toBe(404);
  });
});
