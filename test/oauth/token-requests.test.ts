import { createHash, randomBytes } from 'node:crypto';
import { startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata, OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { registerGatewayResource } from '../../src/oauth/resources';
import { grantWorld, type GrantWorld } from '../support/grant-world';
import { HOST_REDIRECT as REDIRECT, oauthHost, type OAuthHost } from '../support/oauth-host';
import { CookieJar, startOAuthService, throughConsent, type ConsentDetails } from '../support/oauth';
import type { TestService } from '../support/service';
import { broker, rootGrant } from '../support/world';

/**
 * The token endpoint and the authorization request as an attacker uses them (CONTRACT §20): a
 * token asked for another resource than the consented one (registered or not), a code replayed
 * (which also ends what the code had given), and an authorization request without the `mcp` scope,
 * refused before anyone is asked to consent. Each refusal is checked in `oauth_state` too: no
 * token, no code, no interaction was stored for it.
 */
jest.setTimeout(60_000);

let service: TestService;
let world: GrantWorld;
let host: OAuthHost;
let metadata: AuthorizationServerMetadata;
let resource: string;
let otherGatewayResource: string;
let parentId: string;

beforeAll(async () => {
  service = await startOAuthService();
  world = await grantWorld(service);
  const suffix = world.brokerId.slice(-8).toLowerCase();
  resource = `https://gateway-${suffix}.example.test/mcp`;
  await registerGatewayResource(service.deps.db, world.brokerId, resource);
  // A second gateway, registered by another broker: a real resource, but not the one consented.
  otherGatewayResource = `https://other-${suffix}.example.test/mcp`;
  await registerGatewayResource(service.deps.db, (await broker(service, 'other-gateway')).id, otherGatewayResource);
  parentId = (await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId })).id;
  host = await oauthHost(service.baseUrl, resource);
  metadata = host.metadata;
});
afterAll(async () => service?.close());

const registered = () => host.register('Token Host');

const allowBot = (details: ConsentDetails) => ({
  decision: 'allow',
  agentId: world.bot.agentId,
  grantId: details.pods
    .flatMap((p) => p.agents)
    .find((a) => a.id === world.bot.agentId)!
    .grants.find((g) => g.id === parentId)!.id,
  tools: ['pulls.list'],
});

/** Through consent to a code for `resource`, as a host and its person would. */
async function consented(client: OAuthClientInformationFull) {
  const { authorizationUrl, codeVerifier } = await host.start(client);
  const { redirect } = await throughConsent(service.baseUrl, authorizationUrl.href, world.owner.token, allowBot);
  return { code: redirect!.searchParams.get('code')!, codeVerifier };
}

/** The token endpoint asked directly, so a refusal's error code is read as sent. */
async function tokenRequest(params: Record<string, string>) {
  const response = await fetch(metadata.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

/** oidc-provider's stored objects of one model that belong to a client. */
const stored = async (model: string, clientId: string) =>
  Number(
    (
      await service.deps
        .db('oauth_state')
        .where({ model })
        .whereRaw("payload->>'clientId' = ?", [clientId])
        .count<{ count: string }[]>('* as count')
    )[0]!.count,
  );

describe('token requests an attacker makes (CONTRACT §20)', () => {
  it('a code exchanged for an unregistered resource, or for another registered gateway, gets no token', async () => {
    const client = await registered();
    for (const asked of ['https://unregistered.example.test/mcp', otherGatewayResource]) {
      const { code, codeVerifier } = await consented(client);
      const refused = await tokenRequest({
        grant_type: 'authorization_code',
        client_id: client.client_id,
        code,
        code_verifier: codeVerifier,
        redirect_uri: REDIRECT,
        resource: asked,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_target');
      expect(refused.body.access_token).toBeUndefined();
    }
    expect(await stored('RefreshToken', client.client_id)).toBe(0);
    expect(await stored('AccessToken', client.client_id)).toBe(0);
  });

  it('a refresh token presented for another resource is refused and not rotated', async () => {
    const client = await registered();
    const { code, codeVerifier } = await consented(client);
    const tokens = await host.exchange(client, code, codeVerifier);
    const before = await stored('RefreshToken', client.client_id);
    for (const asked of ['https://unregistered.example.test/mcp', otherGatewayResource]) {
      const refused = await tokenRequest({
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: tokens.refresh_token!,
        resource: asked,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_target');
      expect(refused.body.access_token).toBeUndefined();
    }
    expect(await stored('RefreshToken', client.client_id)).toBe(before);
    // Still the host's own: the refusals did not spend it.
    const refreshed = await host.refresh(client, tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();
  });

  it('a replayed code gets nothing and ends the refresh token the code had given', async () => {
    const client = await registered();
    const { code, codeVerifier } = await consented(client);
    const first = await host.exchange(client, code, codeVerifier);
    const replayed = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: codeVerifier,
      redirect_uri: REDIRECT,
      resource,
    });
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe('invalid_grant');
    expect(replayed.body.access_token).toBeUndefined();
    // Whoever replayed it may hold what the first exchange gave: that is ended too.
    const afterReplay = await tokenRequest({
      grant_type: 'refresh_token',
      client_id: client.client_id,
      refresh_token: first.refresh_token!,
      resource,
    });
    expect(afterReplay.body.error).toBe('invalid_grant');
  });

  it("a PKCE verifier that does not match gets nothing; the host's own verifier still redeems the code, once", async () => {
    const client = await registered();
    const { code, codeVerifier } = await consented(client);
    const exchange = (verifier: string) =>
      tokenRequest({
        grant_type: 'authorization_code',
        client_id: client.client_id,
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        resource,
      });
    const wrong = await exchange(randomBytes(32).toString('base64url'));
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    expect(wrong.body.access_token).toBeUndefined();
    expect(await stored('RefreshToken', client.client_id)).toBe(0);
    // A guessed verifier does not spend the code (the library checks PKCE before consuming it); the right one redeems it once.
    expect((await exchange(codeVerifier)).body.access_token).toBeTruthy();
    expect(await stored('RefreshToken', client.client_id)).toBe(1);
    expect((await exchange(codeVerifier)).body.error).toBe('invalid_grant');
  });
});

describe('gateway registration', () => {
  it('a gateway registered a moment ago is taken at once (a refusal is never remembered)', async () => {
    const client = await registered();
    const fresh = `https://fresh-${world.brokerId.slice(-8).toLowerCase()}.example.test/mcp`;
    const ask = async () => {
      const { authorizationUrl } = await startAuthorization(service.baseUrl, {
        metadata,
        clientInformation: client,
        redirectUrl: REDIRECT,
        resource: new URL(fresh),
        scope: 'mcp',
      });
      return new CookieJar().fetch(authorizationUrl.href);
    };
    const before = await ask();
    expect(new URL(before.headers.get('location')!, service.baseUrl).searchParams.get('error')).toBe('invalid_target');
    await registerGatewayResource(service.deps.db, world.brokerId, fresh);
    const after = await ask();
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toMatch(/^\/oauth\/consent\//);
  });
});

describe('the mcp scope', () => {
  it('is advertised in the metadata, at the RFC 8414 path too', async () => {
    expect(metadata.scopes_supported).toContain('mcp');
    const rfc8414 = await fetch(`${service.baseUrl}/.well-known/oauth-authorization-server`);
    expect(rfc8414.status).toBe(200);
    expect(((await rfc8414.json()) as { scopes_supported: string[] }).scopes_supported).toContain('mcp');
  });

  it('an authorization request without it is refused before consent, with invalid_scope at the redirect URI', async () => {
    const client = await registered();
    for (const scope of [undefined, 'openid', 'offline_access', 'mcpx']) {
      const url = new URL(metadata.authorization_endpoint);
      const params: Record<string, string> = {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        code_challenge: createHash('sha256').update('v'.repeat(43)).digest('base64url'),
        code_challenge_method: 'S256',
        resource,
        state: 'st',
        ...(scope === undefined ? {} : { scope }),
      };
      for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
      const answered = await new CookieJar().fetch(url.href);
      const location = new URL(answered.headers.get('location') ?? '/none', service.baseUrl);
      // To the host, not to the consent page: nobody is asked about a request that cannot get a token.
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
      expect(location.searchParams.get('error')).toBe('invalid_scope');
      expect(location.searchParams.get('error_description')).toMatch(/mcp/);
      expect(location.searchParams.get('state')).toBe('st');
      expect(location.searchParams.get('iss')).toBe(service.baseUrl);
    }
    const interactions = await service.deps
      .db('oauth_state')
      .where({ model: 'Interaction' })
      .whereRaw("payload->'params'->>'client_id' = ?", [client.client_id]);
    expect(interactions).toEqual([]);
  });
});
