import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A test account of the provider: its subject becomes the console user's id. */
export const TEST_ACCOUNT = { login: 'alice@example.test', password: 'correct horse battery staple', sub: 'oidc-alice' };
export const CLIENT_ID = 'grant-broker-console';

export interface IdentityProvider {
  issuer: string;
  jwksUri: string;
  /** Registers the console's callback (known only once the service listens) and starts answering. */
  serve(redirectUri: string): Promise<void>;
  close(): Promise<void>;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

const page = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test identity provider</title></head><body><main>${body}</main></body></html>`;

/**
 * A real OpenID Provider (the `oidc-provider` package) on a spare port of 127.0.0.1: discovery,
 * JWKS, authorization code with PKCE required, one public client (the console) and one account
 * with a password. Its sign-in page is a plain form served here (the package's development pages
 * load web fonts from outside the machine).
 */
export async function startIdentityProvider(): Promise<IdentityProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (handler) handler(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    async serve(redirectUri) {
      const { default: Provider } = await import('oidc-provider');
      const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: CLIENT_ID,
            token_endpoint_auth_method: 'none',
            redirect_uris: [redirectUri],
            grant_types: ['authorization_code'],
            response_types: ['code'],
          },
        ],
        jwks: { keys: [{ ...key, kid: 'test-key', alg: 'RS256', use: 'sig' }] },
        cookies: { keys: [randomBytes(32).toString('hex')] },
        pkce: { required: () => true },
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        clientBasedCORS: () => true,
        ttl: { AuthorizationCode: 60, Interaction: 600, Session: 600, Grant: 600, IdToken: 600, AccessToken: 600 },
        findAccount: (_ctx, sub) => (sub === TEST_ACCOUNT.sub ? { accountId: sub, claims: () => ({ sub }) } : undefined),
      });
      const callback = provider.callback();
      handler = (req, res) => {
        const url = new URL(req.url ?? '/', issuer);
        const uid = /^\/interaction\/([\w-]+)$/.exec(url.pathname)?.[1];
        if (!uid) {
          void callback(req, res);
          return;
        }
        void (async () => {
          const details = await provider.interactionDetails(req, res);
          if (req.method === 'GET') {
            res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
            res.end(
              page(
                `<h1>Sign in to the test provider</h1><form method="post" action="/interaction/${uid}">` +
                  '<label>Email <input name="login" type="email"></label> <label>Password <input name="password" type="password"></label> ' +
                  '<button type="submit">Sign in</button></form>',
              ),
            );
            return;
          }
          const form = await readForm(req);
          if (form.get('login') !== TEST_ACCOUNT.login || form.get('password') !== TEST_ACCOUNT.password) {
            res.writeHead(401, { 'Content-Type': 'text/html; charset=utf-8' });
            res.end(page('<p role="alert">Wrong email or password.</p>'));
            return;
          }
          const grant = new provider.Grant({ accountId: TEST_ACCOUNT.sub, clientId: String(details.params.client_id) });
          grant.addOIDCScope('openid');
          const grantId = await grant.save();
          await provider.interactionFinished(req, res, { login: { accountId: TEST_ACCOUNT.sub }, consent: { grantId } });
        })().catch((error: unknown) => {
          if (!res.headersSent) res.writeHead(500).end(String(error));
        });
      };
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
