// An identity provider shared with other applications, as a Google, Entra, Auth0 or Keycloak
// tenant is: a real OpenID Provider (the `oidc-provider` package, which is ESM only, hence a
// process of its own) over HTTPS on 127.0.0.1, with two clients (ours, the console, and another
// application's) and two APIs (ours and another) whose access tokens are JWTs. Prints one JSON
// line (its issuer, certificate file, signing key and the names above) and serves until its
// stdin closes. Its sign-in page is none: the account signs in and consents at once, since what
// matters to the tests is what the provider issues.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Provider from 'oidc-provider';

const names = {
  ourClient: 'grant-broker-console',
  otherClient: 'payroll-app',
  ourApi: 'https://broker.test/api',
  otherApi: 'https://payroll.test/api',
  account: 'oidc-carol',
  redirectUri: 'https://app.test/callback',
  kid: 'shared-key',
};

// A self-signed certificate for 127.0.0.1, made for this run.
const dir = mkdtempSync(path.join(tmpdir(), 'shared-idp-'));
const keyFile = path.join(dir, 'key.pem');
const certFile = path.join(dir, 'cert.pem');
execFileSync(
  'openssl',
  ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]),
  { stdio: 'ignore' },
);

let handler;
const server = https.createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (req, res) => handler(req, res));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `https://127.0.0.1:${server.address().port}`;
const signingJwk = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: names.kid };

const client = (clientId) => ({
  client_id: clientId,
  token_endpoint_auth_method: 'none',
  redirect_uris: [names.redirectUri],
  grant_types: ['authorization_code'],
  response_types: ['code'],
});
const provider = new Provider(issuer, {
  clients: [client(names.ourClient), client(names.otherClient)],
  jwks: { keys: [{ ...signingJwk, alg: 'RS256', use: 'sig' }] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => names.ourApi,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource !== names.ourApi && resource !== names.otherApi) throw new Error(`unknown resource ${resource}`);
        return { scope: 'api', audience: resource, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: { AuthorizationCode: 60, Interaction: 600, Session: 600, Grant: 600, IdToken: 600, AccessToken: 600 },
  findAccount: (_ctx, sub) => (sub === names.account ? { accountId: sub, claims: () => ({ sub }) } : undefined),
});
const callback = provider.callback();
handler = (req, res) => {
  const uid = /^\/interaction\/([\w-]+)$/.exec(new URL(req.url ?? '/', issuer).pathname)?.[1];
  if (!uid) return void callback(req, res);
  void (async () => {
    const details = await provider.interactionDetails(req, res);
    const grant = new provider.Grant({ accountId: names.account, clientId: String(details.params.client_id) });
    grant.addOIDCScope('openid');
    grant.addResourceScope(String(details.params.resource), 'api');
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { login: { accountId: names.account }, consent: { grantId } });
  })().catch((error) => {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  });
};

process.stdout.write(`${JSON.stringify({ issuer, jwksUri: `${issuer}/jwks`, caFile: certFile, signingJwk, ...names })}\n`);
process.stdin.on('end', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
process.stdin.resume();
