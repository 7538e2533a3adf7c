import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import jwt from 'jsonwebtoken';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { expect, test, type Page } from '@playwright/test';
import { registerGatewayResource } from '../../src/oauth/resources';
import { PlaywrightHost } from './oauth-host';
import { caller, seedWorld, startConsoleService, uniqueId, type ConsoleService } from './world';

/**
 * An MCP host signing in with OAuth (CONTRACT §20), driven by the official SDK's own client
 * (`auth()` with an OAuthClientProvider written here, as every host writes one): it discovers the
 * authorization server, registers (dynamically, or by a Client ID Metadata Document this file
 * serves over https), and sends the person to the consent page in Chromium, where they pick the
 * pod, agent, grant and tools; the SDK then trades the code for tokens.
 */

let service: ConsoleService;
let world: Awaited<ReturnType<typeof seedWorld>>;
let callback: { server: Server; url: string };
let metadataHost: { server: Server; url: string; dir: string; document?: Record<string, unknown> };
let resource: string;
let parentId: string;

test.describe.configure({ mode: 'serial' });

/** A page the host's redirect lands on: the browser shows it, the test reads the address. */
async function startCallback() {
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html lang="en"><head><title>Host callback</title></head><body><p>Back at the host.</p></body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback` };
}

/** An https server on 127.0.0.1 with a certificate made for this run, serving the host's Client ID Metadata Document. */
async function startMetadataHost() {
  const dir = mkdtempSync(path.join(tmpdir(), 'cimd-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ].concat(['-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')]),
    { stdio: 'ignore' },
  );
  const host: { server: Server; url: string; dir: string; document?: Record<string, unknown> } = { server: undefined!, url: '', dir };
  host.server = createHttpsServer(
    { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) },
    (req, res) => {
      if (req.url !== '/host/client.json' || !host.document) return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(host.document));
    },
  );
  await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
  host.url = `https://127.0.0.1:${(host.server.address() as AddressInfo).port}/host/client.json`;
  return host;
}

/** A host signing in to the registered gateway resource, its person in this Playwright page. */
const hostOn = (page: Page, name: string, clientMetadataUrl?: string) =>
  new PlaywrightHost(page, { name, redirectUrl: callback.url, clientMetadataUrl, resource });

const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as {
    sub: string;
    aud: string;
    agent_id: string;
    client_id: string;
  };

/** Signs the person in with a one-time link in the same tab: the console returns them to the consent page. */
async function signInThroughConsole(page: Page, userId: string) {
  await expect(page).toHaveURL(`${service.baseUrl}/console/sign-in`);
  await page.goto(await service.linkFor(userId));
  await expect(page).toHaveURL(new RegExp(`^${service.baseUrl}/console/oauth/consent/[\\w-]+$`));
}

/** No serious or critical accessibility violation on the page as it is now. */
async function accessible(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);
}

const consentForm = (page: Page) => page.getByRole('form', { name: 'What may it use?' });

/** The code (or error) the authorization server sent the browser back to the host with. */
async function backAtHost(page: Page): Promise<URL> {
  await page.waitForURL((url) => url.href.startsWith(callback.url));
  return new URL(page.url());
}

async function oauthChildren(clientId: string) {
  const page = await world.owner.get(`/api/pods/${world.podId}/grants?limit=200`);
  return (
    page.items as Array<{ id: string; tools: string[]; status: string; oauthClient: { clientId: string; name: string } | null }>
  ).filter((grant) => grant.oauthClient?.clientId === clientId);
}

test.beforeAll(async () => {
  callback = await startCallback();
  metadataHost = await startMetadataHost();
  // The metadata document lives on 127.0.0.1: this deployment allows private addresses, and trusts the run's certificate.
  service = await startConsoleService(
    { OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: 'true' },
    { clientMetadataCa: readFileSync(path.join(metadataHost.dir, 'cert.pem'), 'utf8') },
  );
  world = await seedWorld(service);
  resource = `https://${uniqueId('gw').toLowerCase()}.example.test/mcp`;
  await registerGatewayResource(service.deps.db, world.brokerId, resource);
  parentId = (await world.grant({ tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' })).id;
});

test.afterAll(async () => {
  await service?.close();
  callback?.server.close();
  metadataHost?.server.close();
  if (metadataHost) rmSync(metadataHost.dir, { recursive: true, force: true });
});

test('a host registered dynamically: the person signs in, picks pod, agent, grant and tools, and the SDK gets tokens for that child grant', async ({
  page,
}) => {
  const host = hostOn(page, 'Test Host');
  expect(await auth(host, { serverUrl: service.baseUrl, scope: 'mcp' })).toBe('REDIRECT');
  const clientId = host.information!.client_id;
  // Not signed in: through the console's sign-in and back to the same request.
  await signInThroughConsole(page, world.ownerId);
  const response = await page.reload();
  const csp = response?.headers()['content-security-policy'] ?? '';
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");

  await expect(page.getByRole('heading', { level: 1, name: 'Connect Test Host?' })).toBeVisible();
  await expect(page.getByText(new URL(callback.url).host)).toBeVisible();
  const form = consentForm(page);
  await expect(form.getByLabel('Pod', { exact: true })).toHaveValue(world.podId);
  await expect(form.getByLabel('Pod', { exact: true }).locator('option', { hasText: 'Browser pod' })).toHaveCount(1);
  await form.getByLabel('Agent', { exact: true }).selectOption({ label: world.agentName });
  await form.getByLabel('Grant', { exact: true }).selectOption(parentId);
  const read = form.getByRole('checkbox', { name: 'repos.read_file' });
  const comment = form.getByRole('checkbox', { name: 'issues.create_comment' });
  await expect(read).toBeChecked();
  await expect(comment).toBeChecked();
  await expect(form.getByLabel('Expires (UTC)', { exact: true })).not.toHaveValue('');

  // Nothing ticked is refused on the page, said aloud, and focus goes to the tools.
  await read.uncheck();
  await comment.uncheck();
  await form.getByRole('button', { name: 'Allow' }).click();
  await expect(form.getByRole('alert')).toContainText('Tick at least one tool');
  await expect(read).toBeFocused();
  // A time past the grant's own is refused the same way.
  await read.check();
  await form.getByLabel('Expires (UTC)', { exact: true }).fill('2999-01-01T00:00');
  await form.getByRole('button', { name: 'Allow' }).click();
  await expect(form.getByRole('alert')).toContainText("cannot be later than the grant's own");
  await expect(form.getByLabel('Expires (UTC)', { exact: true })).toBeFocused();
  const soon = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 16);
  await form.getByLabel('Expires (UTC)', { exact: true }).fill(soon);
  // Put right, the errors are gone.
  await expect(form.getByRole('alert')).toHaveCount(0);

  await accessible(page);
  await page.screenshot({ path: 'docs/console/oauth-consent.png', fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
  await accessible(page);
  await page.screenshot({ path: 'docs/console/oauth-consent-phone.png', fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });

  await form.getByRole('button', { name: 'Allow' }).click();
  const back = await backAtHost(page);
  expect(back.searchParams.get('iss')).toBe(service.baseUrl);
  expect(back.searchParams.get('state')).toBe('host-state');
  expect(await auth(host, { serverUrl: service.baseUrl, authorizationCode: back.searchParams.get('code')! })).toBe('AUTHORIZED');

  const claims = claimsOf(host.saved!.access_token);
  expect(claims).toMatchObject({ aud: resource, agent_id: world.agentId, client_id: clientId });
  const child = await world.owner.get(`/api/grants/${claims.sub}`);
  expect(child).toMatchObject({
    parentId,
    tools: ['repos.read_file'],
    target: { kind: 'seat', id: world.agentId },
    expiresAt: `${soon}:00.000Z`,
    oauthClient: { clientId, name: 'Test Host' },
  });

  // The grant tree names the host that holds the child; the existing revoke ends its tokens.
  await page.goto(`${service.baseUrl}/console/pods/${world.podId}/grants`);
  const row = page.getByRole('row').filter({ has: page.getByRole('button', { name: `Copy id ${claims.sub}`, exact: true }) });
  await expect(row).toContainText('held by application Test Host');
  await page.goto(`${service.baseUrl}/console/grants/${claims.sub}/calls`);
  await expect(page.getByText(/Held by application Test Host \(client id/)).toBeVisible();
  await page.goto(`${service.baseUrl}/console/pods/${world.podId}/grants`);
  await row.getByRole('button', { name: /^Revoke .* held by Test Host/ }).click();
  await page.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Revoked' })).toBeVisible();
  expect((await world.owner.get(`/api/grants/${claims.sub}`)).status).toBe('revoked');
  // The refresh token stood for the child grant: the next refresh is refused.
  host.saved = { ...host.saved!, access_token: 'expired' };
  await expect(auth(host, { serverUrl: service.baseUrl })).rejects.toThrow();
});

test('a host known by its Client ID Metadata Document gets the same consent, and the child grant names it', async ({ page }) => {
  metadataHost.document = {
    client_id: metadataHost.url,
    client_name: 'Metadata Host',
    redirect_uris: [callback.url],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  const host = hostOn(page, 'Metadata Host', metadataHost.url);
  expect(await auth(host, { serverUrl: service.baseUrl, scope: 'mcp' })).toBe('REDIRECT');
  expect(host.information!.client_id).toBe(metadataHost.url);
  await signInThroughConsole(page, world.ownerId);
  await expect(page.getByRole('heading', { level: 1, name: 'Connect Metadata Host?' })).toBeVisible();
  await expect(page.getByText(metadataHost.url)).toBeVisible();
  const form = consentForm(page);
  await form.getByLabel('Grant', { exact: true }).selectOption(parentId);
  await form.getByRole('checkbox', { name: 'repos.read_file' }).uncheck();
  await form.getByRole('button', { name: 'Allow' }).click();
  const back = await backAtHost(page);
  expect(await auth(host, { serverUrl: service.baseUrl, authorizationCode: back.searchParams.get('code')! })).toBe('AUTHORIZED');
  const claims = claimsOf(host.saved!.access_token);
  expect(claims.client_id).toBe(metadataHost.url);
  expect(await world.owner.get(`/api/grants/${claims.sub}`)).toMatchObject({
    parentId,
    tools: ['issues.create_comment'],
    oauthClient: { clientId: metadataHost.url, name: 'Metadata Host' },
  });
});

test('"Deny" sends the host access_denied and mints nothing', async ({ page }) => {
  const host = hostOn(page, 'Denied Host');
  await auth(host, { serverUrl: service.baseUrl, scope: 'mcp' });
  await signInThroughConsole(page, world.ownerId);
  await consentForm(page).getByRole('button', { name: 'Deny' }).click();
  const back = await backAtHost(page);
  expect(back.searchParams.get('error')).toBe('access_denied');
  expect(back.searchParams.get('code')).toBeNull();
  expect(back.searchParams.get('iss')).toBe(service.baseUrl);
  expect(await oauthChildren(host.information!.client_id)).toEqual([]);
  expect(host.saved).toBeUndefined();
});

test('a person who may not run the agent is offered nothing, and a forged answer is refused', async ({ page }) => {
  const host = hostOn(page, 'Forging Host');
  // A member of the pod (not an owner or admin) may see it but not consent for its agents.
  await auth(host, { serverUrl: service.baseUrl, scope: 'mcp' });
  await signInThroughConsole(page, world.memberId);
  const form = consentForm(page);
  await expect(form).toContainText('You run no agent that holds a grant behind this gateway');
  await expect(form.getByLabel('Agent', { exact: true })).toHaveCount(0);
  await expect(page.getByRole('option', { name: world.agentName })).toHaveCount(0);
  await expect(form.getByRole('button', { name: 'Allow' })).toBeDisabled();
  // Sent from the consent page itself: the browser's interaction cookie goes with it, only the person differs.
  const uid = new URL(page.url()).pathname.split('/').pop()!;
  const forge = (token: string) =>
    page.evaluate(
      async ({ token, uid, body }) => {
        const response = await fetch(`/oauth/consent/${uid}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as { code?: string } };
      },
      { token, uid, body: { decision: 'allow', agentId: world.agentId, grantId: parentId, tools: ['repos.read_file'] } },
    );
  // The member sees the pod, so the refusal says why; a stranger to the pod finds nothing at all.
  expect(await forge(world.sign(world.memberId))).toMatchObject({ status: 403, body: { code: 'not_pod_admin' } });
  const stranger = uniqueId('stranger');
  await caller(service, world.sign(stranger)).post('/api/pods', { name: 'Elsewhere' });
  expect(await forge(world.sign(stranger))).toMatchObject({ status: 404 });
  expect(await oauthChildren(host.information!.client_id)).toEqual([]);
  // The request is still open, and still answerable by its own person: "Deny" works.
  await form.getByRole('button', { name: 'Deny' }).click();
  expect((await backAtHost(page)).searchParams.get('error')).toBe('access_denied');
});

test('a session that ends while the page is open sends the person through sign-in and back to the same request', async ({ page }) => {
  const host = hostOn(page, 'Patient Host');
  await auth(host, { serverUrl: service.baseUrl, scope: 'mcp' });
  await expect(page).toHaveURL(`${service.baseUrl}/console/sign-in`);
  // The tab holds a token that expires in two seconds, as an identity provider's ID token ends.
  const returnTo = await page.evaluate(
    ({ token, userId }) => {
      // The page's own storage (this file is compiled without the DOM's types).
      const sessionStorage = (
        globalThis as unknown as { sessionStorage: { setItem(k: string, v: string): void; getItem(k: string): string | null } }
      ).sessionStorage;
      sessionStorage.setItem(
        'grant-broker.session',
        JSON.stringify({ token, userId, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }),
      );
      return sessionStorage.getItem('grant-broker.return-to');
    },
    { token: jwt.sign({}, service.config.JWT_SECRET, { algorithm: 'HS256', subject: world.ownerId, expiresIn: 2 }), userId: world.ownerId },
  );
  await page.goto(`${service.baseUrl}/console${returnTo}`);
  await expect(page.getByRole('heading', { level: 1, name: 'Connect Patient Host?' })).toBeVisible();
  await page.waitForTimeout(2_500);
  await consentForm(page).getByRole('button', { name: 'Deny' }).click();
  await signInThroughConsole(page, world.ownerId);
  await expect(page).toHaveURL(`${service.baseUrl}/console${returnTo}`);
  await consentForm(page).getByRole('button', { name: 'Deny' }).click();
  expect((await backAtHost(page)).searchParams.get('error')).toBe('access_denied');
});

test("a host's hostile name is shown as inert text and the page still fits a phone", async ({ page }) => {
  const seen: string[] = [];
  page.on('dialog', (dialog) => {
    seen.push(dialog.message());
    void dialog.dismiss();
  });
  // Half a surrogate pair is not a name: the registration is refused as invalid metadata, never a 5xx.
  await expect(auth(hostOn(page, 'lone \ud800 half'), { serverUrl: service.baseUrl, scope: 'mcp' })).rejects.toThrow(/well-formed Unicode/);
  // Markup, a right-to-left override, an emoji and one long unbroken word.
  const hostile = `<img src=x onerror="alert(1)"><script>alert(2)</script>invoice\u202Egpj.exe 😀 ${'W'.repeat(120)}`;
  const host = hostOn(page, hostile);
  await auth(host, { serverUrl: service.baseUrl, scope: 'mcp' });
  await signInThroughConsole(page, world.ownerId);
  const heading = page.getByRole('heading', { level: 1 });
  await expect(heading).toContainText('<img src=x onerror="alert(1)"><script>alert(2)</script>');
  await expect(heading).toContainText('invoice⟨U+202E⟩gpj.exe');
  await expect(heading).toContainText('😀');
  await expect(heading).toContainText('W'.repeat(120));
  expect(await page.locator('main img, main script').count()).toBe(0);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
  expect(seen).toEqual([]);
});
