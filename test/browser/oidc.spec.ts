import { discoverAuthorizationServerMetadata, registerClient, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { expect, test } from '@playwright/test';
import { registerBroker } from '../../src/admin/brokers';
import { registerGatewayResource } from '../../src/oauth/resources';
import { CLIENT_ID, startIdentityProvider, TEST_ACCOUNT, type IdentityProvider } from './identity-provider';
import { startConsoleService, uniqueId, type ConsoleService } from './world';

let provider: IdentityProvider;
let service: ConsoleService;

test.beforeAll(async () => {
  provider = await startIdentityProvider();
  // The API verifies the console's ID tokens as it verifies every human JWT: the issuer's JWKS,
  // its issuer, and the console's client id as the audience.
  service = await startConsoleService({
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: CLIENT_ID,
    JWT_JWKS_URI: provider.jwksUri,
    JWT_ISSUER: provider.issuer,
    JWT_AUDIENCE: CLIENT_ID,
  });
  await provider.serve(`${service.baseUrl}/console/callback`);
});

test.afterAll(async () => {
  await service?.close();
  await provider?.close();
});

test('signs in with OpenID Connect (code + PKCE) at a real provider, and the API accepts the token', async ({ page }) => {
  const apiCalls: Array<{ url: string; status: number }> = [];
  page.on('response', (response) => {
    if (new URL(response.url()).pathname.startsWith('/api/')) apiCalls.push({ url: response.url(), status: response.status() });
  });
  await page.goto(`${service.baseUrl}/console/approvals`);
  const response = await page.goto(`${service.baseUrl}/console/sign-in`);
  expect(response?.headers()['content-security-policy']).toContain(`connect-src 'self' ${provider.issuer}`);
  // Links are a development sign-in: with an identity provider configured they are refused.
  const link = await fetch(`${service.baseUrl}/console/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: 'csl_' + 'a'.repeat(43) }),
  });
  expect(link.status).toBe(404);

  await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
  await expect(page).toHaveURL(new RegExp(`^${provider.issuer}/interaction/`));

  // A wrong password stays at the provider.
  await page.getByLabel('Email').fill(TEST_ACCOUNT.login);
  await page.getByLabel('Password').fill('wrong');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('Wrong email or password');
  await page.goBack();
  await page.getByLabel('Email').fill(TEST_ACCOUNT.login);
  await page.getByLabel('Password').fill(TEST_ACCOUNT.password);
  await page.getByRole('button', { name: 'Sign in' }).click();

  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  await expect(page.getByText(`Signed in as ${TEST_ACCOUNT.sub}`)).toBeVisible();
  await expect(page.getByText('You are not a member of any pod yet')).toBeVisible();
  expect(page.url()).toBe(`${service.baseUrl}/console/`);
  await page.getByRole('link', { name: 'Approvals' }).click();
  await expect(page.getByText('Nothing waits for you.')).toBeVisible();
  expect(apiCalls.filter((call) => call.url.includes('/api/approvals')).length).toBeGreaterThan(0);
  expect(apiCalls.filter((call) => call.status !== 200)).toEqual([]);

  // The token the console holds is the provider's ID token, and the API takes it as a human JWT.
  const token = (await page.evaluate('JSON.parse(sessionStorage.getItem("grant-broker.session")).token')) as string;
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  expect(claims).toMatchObject({ iss: provider.issuer, aud: CLIENT_ID, sub: TEST_ACCOUNT.sub });
  const pod = await fetch(`${service.baseUrl}/api/pods`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'Made with an ID token' }),
  });
  expect(pod.status).toBe(201);
  // A token of the same shape signed by anyone else is refused.
  const forged = `${token.split('.')[0]}.${token.split('.')[1]}.${Buffer.from('not the signature').toString('base64url')}`;
  const refused = await fetch(`${service.baseUrl}/api/approvals`, { headers: { Authorization: `Bearer ${forged}` } });
  expect(refused.status).toBe(401);
});

test("an MCP host's consent page sends a person who is not signed in through the identity provider and back to it", async ({ page }) => {
  const { createDatabase } = await import('../../src/db/database');
  const db = createDatabase(service.config.DATABASE_URL, 1);
  const resource = `https://${uniqueId('gw').toLowerCase()}.example.test/mcp`;
  await registerBroker(db, uniqueId('broker'))
    .then((broker) => registerGatewayResource(db, broker.id, resource))
    .finally(() => db.destroy());
  const metadata = (await discoverAuthorizationServerMetadata(service.baseUrl))!;
  const redirectUrl = 'http://127.0.0.1:9/callback';
  const client = await registerClient(service.baseUrl, {
    metadata,
    clientMetadata: { client_name: 'OIDC Host', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' },
  });
  const { authorizationUrl } = await startAuthorization(service.baseUrl, {
    metadata,
    clientInformation: client,
    redirectUrl,
    resource: new URL(resource),
    scope: 'mcp',
  });
  await page.goto(authorizationUrl.href);
  await expect(page).toHaveURL(`${service.baseUrl}/console/sign-in`);
  await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
  await page.getByLabel('Email').fill(TEST_ACCOUNT.login);
  await page.getByLabel('Password').fill(TEST_ACCOUNT.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(new RegExp(`^${service.baseUrl}/console/oauth/consent/[\\w-]+$`));
  await expect(page.getByRole('heading', { level: 1, name: 'Connect OIDC Host?' })).toBeVisible();
  await expect(page.getByText(`Signed in as ${TEST_ACCOUNT.sub}`)).toBeVisible();
  // This person runs no agent behind that gateway: nothing to give, and saying no still answers the host.
  await expect(page.getByRole('button', { name: 'Allow' })).toBeDisabled();
  const denied = page.waitForRequest((request) => request.url().startsWith(redirectUrl));
  await page.getByRole('button', { name: 'Deny' }).click();
  expect(new URL((await denied).url()).searchParams.get('error')).toBe('access_denied');
});
