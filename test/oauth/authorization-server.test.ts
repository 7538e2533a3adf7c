import { createHash, randomBytes } from 'node:crypto';
import type { AuthorizationServerMetadata, OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { registerGatewayResource } from '../../src/oauth/resources';
import { grantWorld, type GrantWorld } from '../support/grant-world';
import { HOST_REDIRECT as REDIRECT, oauthHost, type OAuthHost } from '../support/oauth-host';
import { CookieJar, startOAuthService, throughConsent, type ConsentDetails } from '../support/oauth';
import type { TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith, rootGrant } from '../support/world';

const jwtPart = (token: string, index: number) => JSON.parse(Buffer.from(token.split('.')[index]!, 'base64url').toString('utf8'));
const decodeJwt = (token: string) => jwtPart(token, 1) as Record<string, unknown> & { sub: string; exp: number; iat: number };
const decodeProtectedHeader = (token: string) => jwtPart(token, 0) as { alg: string };

let service: TestService;
let world: GrantWorld;
let host: OAuthHost;
let metadata: AuthorizationServerMetadata;
let resource: string;
let parentId: string;

beforeAll(async () => {
  service = await startOAuthService();
  world = await grantWorld(service);
  resource = `https://gateway-${world.brokerId.slice(-8).toLowerCase()}.example.test/mcp`;
  await registerGatewayResource(service.deps.db, world.brokerId, resource);
  parentId = (await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId })).id;
  host = await oauthHost(service.baseUrl, resource);
  metadata = host.metadata;
});
afterAll(async () => service?.close());

const registered = (extra: Record<string, unknown> = {}) => host.register('Test Host', extra);

const allowBot = (details: ConsentDetails) => ({
  decision: 'allow',
  agentId: world.bot.agentId,
  grantId: details.pods
    .flatMap((p) => p.agents)
    .find((a) => a.id === world.bot.agentId)!
    .grants.find((g) => g.id === parentId)!.id,
  tools: ['pulls.list'],
});

async function authorized(
  client: OAuthClientInformationFull,
  person = world.owner.token,
  decide: (details: ConsentDetails) => Record<string, unknown> = allowBot,
) {
  const { authorizationUrl, codeVerifier } = await host.start(client, 'state-1');
  const walked = await throughConsent(service.baseUrl, authorizationUrl.href, person, decide);
  return { ...walked, codeVerifier };
}

describe('the authorization server (CONTRACT §20)', () => {
  it('publishes RFC 8414 metadata: S256 only, registration, revocation, client metadata documents, iss in the response', async () => {
    expect(metadata).toMatchObject({
      issuer: service.baseUrl,
      authorization_endpoint: `${service.baseUrl}/oauth/authorize`,
      token_endpoint: `${service.baseUrl}/oauth/token`,
      registration_endpoint: `${service.baseUrl}/oauth/register`,
      revocation_endpoint: `${service.baseUrl}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('a host registered dynamically gets, after consent, an audience-bound JWT for the child grant the consent created', async () => {
    const client = await registered();
    const { details, redirect, codeVerifier } = await authorized(client);
    expect(details.client).toEqual({ clientId: client.client_id, name: 'Test Host', redirectHost: '127.0.0.1:9' });
    expect(redirect!.searchParams.get('iss')).toBe(service.baseUrl);
    expect(redirect!.searchParams.get('state')).toBe('state-1');
    const tokens = await host.exchange(client, redirect!.searchParams.get('code')!, codeVerifier);
    const claims = decodeJwt(tokens.access_token);
    expect(decodeProtectedHeader(tokens.access_token).alg).toBe('ES256');
    expect(claims).toMatchObject({ iss: service.baseUrl, aud: resource, agent_id: world.bot.agentId, client_id: client.client_id });
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(600);
    const child = await service.http.get(`/api/grants/${claims.sub}`).set(world.owner.auth).expect(200);
    expect(child.body).toMatchObject({
      parentId,
      tools: ['pulls.list'],
      target: { kind: 'seat', id: world.bot.agentId },
      oauthClient: { clientId: client.client_id, name: 'Test Host' },
    });
    expect(tokens.refresh_token).toBeTruthy();
  });

  it('refresh tokens rotate; presenting a used one is invalid_grant and ends the whole family', async () => {
    const client = await registered();
    const { redirect, codeVerifier } = await authorized(client);
    const first = await host.exchange(client, redirect!.searchParams.get('code')!, codeVerifier);
    const second = await host.refresh(client, first.refresh_token!);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(decodeJwt(second.access_token).aud).toBe(resource);
    await expect(host.refresh(client, first.refresh_token!)).rejects.toThrow(/invalid_grant|grant request is invalid/i);
    // The reuse revoked the family: the rotated token is dead too.
    await expect(host.refresh(client, second.refresh_token!)).rejects.toThrow();
  });

  it('a replayed code and a PKCE verifier mismatch are invalid_grant', async () => {
    const client = await registered();
    const { redirect, codeVerifier } = await authorized(client);
    const code = redirect!.searchParams.get('code')!;
    const exchange = (verifier: string) => host.exchange(client, code, verifier);
    await expect(exchange(randomBytes(32).toString('base64url'))).rejects.toThrow(/invalid_grant|grant request is invalid/i);
    const other = await authorized(client);
    await exchange(codeVerifier).catch(() => undefined);
    const otherCode = other.redirect!.searchParams.get('code')!;
    const ok = await host.exchange(client, otherCode, other.codeVerifier);
    expect(ok.access_token).toBeTruthy();
    await expect(host.exchange(client, otherCode, other.codeVerifier)).rejects.toThrow(/invalid_grant|grant request is invalid/i);
  });

  it('refuses a missing or unregistered resource, a plain challenge and a redirect URI the client did not register', async () => {
    const client = await registered();
    const base = new URL(metadata.authorization_endpoint);
    const query = (params: Record<string, string>) => {
      const url = new URL(base);
      const challenge = createHash('sha256').update('v'.repeat(43)).digest('base64url');
      const all = {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource,
        state: 's',
        ...params,
      };
      for (const [key, value] of Object.entries(all)) if (value !== '') url.searchParams.set(key, value);
      return new CookieJar().fetch(url.href);
    };
    const errorOf = async (response: Response) => {
      const location = response.headers.get('location');
      if (location) return new URL(location).searchParams.get('error');
      return ((await response.json()) as { error: string }).error;
    };
    expect(await errorOf(await query({ resource: '' }))).toBe('invalid_target');
    expect(await errorOf(await query({ resource: 'https://elsewhere.example.test/mcp' }))).toBe('invalid_target');
    expect(await errorOf(await query({ code_challenge_method: 'plain', code_challenge: 'v'.repeat(43) }))).toBe('invalid_request');
    expect(await errorOf(await query({ code_challenge: '', code_challenge_method: '' }))).toBe('invalid_request');
    const wrongRedirect = await query({ redirect_uri: 'http://127.0.0.1:9/elsewhere' });
    expect(wrongRedirect.headers.get('location')).toBeNull();
    expect(await errorOf(wrongRedirect)).toBe('invalid_redirect_uri');
  });

  it('"Deny" returns access_denied and mints no grant', async () => {
    const client = await registered();
    const before = await service.http.get(`/api/pods/${world.podId}/grants`).set(world.owner.auth).expect(200);
    const { redirect } = await authorized(client, world.owner.token, () => ({ decision: 'deny' }));
    expect(redirect!.searchParams.get('error')).toBe('access_denied');
    const after = await service.http.get(`/api/pods/${world.podId}/grants`).set(world.owner.auth).expect(200);
    expect(after.body.items.length).toBe(before.body.items.length);
  });

  it("consent by a person who may not run the agent, or with another pod's grant, is refused and mints nothing", async () => {
    const client = await registered();
    // A plain member sees no pod to consent from, and a forged answer naming the bot is refused.
    const asMember = await authorized(client, world.member.token, () => ({
      decision: 'allow',
      agentId: world.bot.agentId,
      grantId: parentId,
      tools: ['pulls.list'],
    }));
    expect(asMember.details.pods).toEqual([]);
    expect(asMember.decision).toMatchObject({ status: 403, body: { code: 'not_pod_admin' } });
    const asOutsider = await authorized(client, world.outsider.token, () => ({
      decision: 'allow',
      agentId: world.bot.agentId,
      grantId: parentId,
      tools: ['pulls.list'],
    }));
    expect(asOutsider.decision).toMatchObject({ status: 404 });
    // Another pod's owner, running their own agent, names this pod's grant.
    const stranger = human(service, 'stranger');
    const otherPod = await podWith(service, stranger);
    const theirAgent = await installAgent(service, stranger, otherPod, 'theirs');
    const theirs = await authorized(client, stranger.token, () => ({
      decision: 'allow',
      agentId: theirAgent.agentId,
      grantId: parentId,
      tools: ['pulls.list'],
    }));
    expect(theirs.decision!.status).toBeGreaterThanOrEqual(400);
    expect(theirs.decision!.status).toBeLessThan(500);
    const grants = await service.http.get(`/api/pods/${world.podId}/grants`).set(world.owner.auth).expect(200);
    const children = grants.body.items.filter(
      (g: { parentId: string; oauthClient: { clientId: string } | null }) => g.oauthClient?.clientId === client.client_id,
    );
    expect(children).toEqual([]);
    // Nor anything of the authorization server's: no code, no grant, no token for this client.
    const minted = await service.deps
      .db('oauth_state')
      .whereIn('model', ['AuthorizationCode', 'Grant', 'RefreshToken', 'AccessToken'])
      .whereRaw("payload->>'clientId' = ?", [client.client_id]);
    expect(minted).toEqual([]);
  });

  it('a consent link opened in another browser finds nothing', async () => {
    const client = await registered();
    const { authorizationUrl } = await host.start(client);
    const attacker = new CookieJar();
    const start = await attacker.fetch(authorizationUrl.href);
    const uid = /consent\/([^/]+)$/.exec(start.headers.get('location')!)![1];
    const victim = new CookieJar();
    const details = await victim.fetch(`${service.baseUrl}/oauth/consent/${uid}/details`, {
      headers: { authorization: `Bearer ${world.owner.token}` },
    });
    expect(details.status).toBe(404);
  });

  it('client metadata holding half a surrogate pair is refused 400 (never a 5xx), and a long name is cut between code points', async () => {
    const response = await fetch(metadata.registration_endpoint!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // The JSON text itself carries the escape: no JavaScript string can be sent with a lone half otherwise.
      body: `{"client_name":"lone \\ud800 half","redirect_uris":["${REDIRECT}"],"token_endpoint_auth_method":"none"}`,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const client = await registered({ client_name: `${'a'.repeat(199)}\u{1F600}tail` });
    const { details } = await authorized(client, world.owner.token, () => ({ decision: 'deny' }));
    expect(details.client.name).toBe(`${'a'.repeat(199)}\u{1F600}`);
  });

  it('a client metadata document on a private address is refused without a fetch', async () => {
    const url = new URL(metadata.authorization_endpoint);
    for (const [key, value] of Object.entries({
      response_type: 'code',
      client_id: 'https://127.0.0.1:9/client.json',
      redirect_uri: REDIRECT,
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
      resource,
    }))
      url.searchParams.set(key, value);
    const response = await new CookieJar().fetch(url.href);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_client');
  });

  it('gateway registration: idempotent, another broker may not take a resource, and a bad URL is refused', async () => {
    await expect(registerGatewayResource(service.deps.db, world.brokerId, resource)).resolves.toMatchObject({
      resource,
      brokerId: world.brokerId,
    });
    const other = await broker(service, 'other');
    await expect(registerGatewayResource(service.deps.db, other.id, resource)).rejects.toThrow(/another broker/);
    await expect(registerGatewayResource(service.deps.db, world.brokerId, 'https://x.example.test/mcp#frag')).rejects.toThrow();
    await connection(service, world.owner, other.id);
  });
});
afterAll(() => {
  for (const line of service.logs)
    if (line.includes('authorization server error') || line.includes('token request refused')) console.log(line.slice(0, 1500));
});
