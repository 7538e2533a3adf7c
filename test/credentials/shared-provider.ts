import { spawn } from 'node:child_process';
import { createHash, createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** What shared-provider-process.mjs prints when it serves. */
interface Started {
  issuer: string;
  jwksUri: string;
  caFile: string;
  signingJwk: Record<string, unknown> & { kid: string };
  ourClient: string;
  otherClient: string;
  ourApi: string;
  otherApi: string;
  account: string;
  redirectUri: string;
  kid: string;
}

export interface SharedProvider extends Omit<Started, 'signingJwk'> {
  /** The key that signs every token the provider issues (the test signs what no flow would give). */
  signingKey: KeyObject;
  /** Signs the account in as `clientId`, asking for `resource` (code + PKCE): the tokens the provider issues. */
  signIn(clientId: string, resource: string): Promise<{ idToken: string; accessToken: string }>;
  close(): Promise<void>;
}

/** One HTTPS request of the user agent, trusting the provider's certificate; no redirect followed. */
function call(
  url: string,
  options: { ca: Buffer; cookies: Map<string, string>; form?: Record<string, string> },
): Promise<{ status: number; location?: string; body: string }> {
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: body ? 'POST' : 'GET',
        ca: options.ca,
        agent: false,
        headers: {
          cookie: [...options.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        for (const line of res.headers['set-cookie'] ?? []) {
          const [pair = ''] = line.split(';');
          const at = pair.indexOf('=');
          options.cookies.set(pair.slice(0, at), pair.slice(at + 1));
        }
        let text = '';
        res.on('data', (chunk) => (text += String(chunk)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Starts shared-provider-process.mjs (a real OpenID Provider over HTTPS) and drives its sign-ins. */
export async function startSharedProvider(): Promise<SharedProvider> {
  const child = spawn(process.execPath, [path.join(__dirname, 'shared-provider-process.mjs')], { stdio: ['pipe', 'pipe', 'pipe'] });
  // Its warnings (an in-memory adapter, the Node version) are kept for a failure's message only.
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const first = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the identity provider exited with ${code}: ${stderr}`)));
  });
  const { signingJwk, ...started } = JSON.parse(first) as Started;
  const ca = readFileSync(started.caFile);
  return {
    ...started,
    signingKey: createPrivateKey({ key: signingJwk, format: 'jwk' }),
    async signIn(clientId, resource) {
      const cookies = new Map<string, string>();
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URL(`${started.issuer}/auth`);
      authorize.search = new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: started.redirectUri,
        scope: 'openid api',
        resource,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        state: randomBytes(8).toString('hex'),
      }).toString();
      // The user agent follows the redirects (authorize, interaction, resume) to the client's callback.
      let location = authorize.toString();
      for (let hop = 0; !location.startsWith(started.redirectUri); hop += 1) {
        if (hop > 10) throw new Error('the sign-in went round in circles');
        const answer = await call(new URL(location, started.issuer).toString(), { ca, cookies });
        if (!answer.location) throw new Error(`the provider answered ${answer.status}: ${answer.body.slice(0, 300)}`);
        location = answer.location;
      }
      const code = new URL(location).searchParams.get('code');
      if (!code) throw new Error(`no code in ${location}`);
      const form = {
        grant_type: 'authorization_code',
        code,
        redirect_uri: started.redirectUri,
        client_id: clientId,
        code_verifier: verifier,
        resource,
      };
      const answer = await call(`${started.issuer}/token`, { ca, cookies: new Map(), form });
      const tokens = JSON.parse(answer.body) as { id_token?: string; access_token?: string };
      if (!tokens.id_token || !tokens.access_token) throw new Error(`the token endpoint answered ${answer.status}: ${answer.body}`);
      return { idToken: tokens.id_token, accessToken: tokens.access_token };
    },
    async close() {
      child.stdin!.end();
      await exited;
    },
  };
}
