import { spawnSync } from 'node:child_process';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { signedPolicyEnv } from '../support/policy-bundles';
import { startReplica, type Replica } from '../support/replica';
import { startSharedProvider, type SharedProvider } from './shared-provider';

/**
 * Production behind an identity provider shared with other applications (a Google, Entra, Auth0
 * or Keycloak tenant): its keys sign tokens for every one of them, and only those meant for this
 * service are a person's credential here: an ID token for our console's client, or an access
 * token for our API. A real OpenID Provider issues the tokens (shared-provider-process.mjs, over
 * HTTPS); the service runs as its own production process that trusts the provider's certificate.
 */
let idp: SharedProvider;
/** The configuration the issue reported: the console's OIDC settings and the keys, nothing else. */
let fromOidc: Replica;
/** The same, and JWT_AUDIENCE: access tokens for our API are accepted too. */
let withApi: Replica;

function production(idp: SharedProvider, extra: Record<string, string> = {}) {
  return startReplica({
    NODE_ENV: 'production',
    ...signedPolicyEnv(),
    NODE_EXTRA_CA_CERTS: idp.caFile,
    JWT_JWKS_URI: idp.jwksUri,
    OIDC_ISSUER: idp.issuer,
    OIDC_CLIENT_ID: idp.ourClient,
    ...extra,
  });
}

beforeAll(async () => {
  idp = await startSharedProvider();
  [fromOidc, withApi] = await Promise.all([production(idp), production(idp, { JWT_AUDIENCE: idp.ourApi })]);
}, 60_000);
afterAll(async () => {
  await fromOidc?.kill('SIGTERM');
  await withApi?.kill('SIGTERM');
  await idp?.close();
});

/** A token the provider's key signs (as it signs every application's), with these claims. */
function signedByTheProvider(claims: Record<string, unknown>, options: jwt.SignOptions = {}): string {
  return jwt.sign({ sub: idp.account, ...claims }, idp.signingKey, {
    algorithm: 'RS256',
    keyid: idp.kid,
    issuer: idp.issuer,
    expiresIn: '10m',
    ...options,
  });
}

describe('a human credential from a shared identity provider', () => {
  let ours: { idToken: string; accessToken: string };
  let theirs: { idToken: string; accessToken: string };
  let podId: string;

  beforeAll(async () => {
    ours = await idp.signIn(idp.ourClient, idp.ourApi);
    theirs = await idp.signIn(idp.otherClient, idp.otherApi);
    const created = await fromOidc.http.post('/api/pods').set('Authorization', `Bearer ${ours.idToken}`).send({ name: 'Shared IdP pod' });
    expect(created.status).toBe(201);
    podId = created.body.id;
  });

  const readPod = (replica: Replica, token: string) => replica.http.get(`/api/pods/${podId}`).set('Authorization', `Bearer ${token}`);

  /** Every token the provider signs that is not meant for this service. */
  const notOurs = (): Array<[string, string]> => [
    ["another client's ID token", theirs.idToken],
    ["another API's access token", theirs.accessToken],
    ['a token with no aud', signedByTheProvider({})],
    ["another issuer's token for our client", signedByTheProvider({}, { issuer: 'https://another-tenant.test/', audience: idp.ourClient })],
    [
      "another client's ID token that lists our client too",
      signedByTheProvider({ azp: idp.otherClient }, { audience: [idp.otherClient, idp.ourClient] }),
    ],
    ['an ID token with two audiences and no azp', signedByTheProvider({}, { audience: [idp.ourClient, idp.otherClient] })],
  ];

  it('with only the OIDC settings: the ID token for our client is accepted (200), every other token it signs is 401', async () => {
    expect((await readPod(fromOidc, ours.idToken)).status).toBe(200);
    expect((await readPod(fromOidc, signedByTheProvider({ azp: idp.ourClient }, { audience: idp.ourClient }))).status).toBe(200);
    // No JWT_AUDIENCE: no access token is meant for this service, not even one naming our API.
    for (const [what, token] of [...notOurs(), ['an access token for our API', ours.accessToken] as [string, string]]) {
      const res = await readPod(fromOidc, token);
      expect({ what, status: res.status, code: res.body.code }).toEqual({ what, status: 401, code: 'unauthenticated' });
    }
  });

  it('with JWT_AUDIENCE: the access token for our API is accepted too, and still nothing else', async () => {
    expect((await readPod(withApi, ours.idToken)).status).toBe(200);
    expect((await readPod(withApi, ours.accessToken)).status).toBe(200);
    for (const [what, token] of notOurs()) {
      const res = await readPod(withApi, token);
      expect({ what, status: res.status, code: res.body.code }).toEqual({ what, status: 401, code: 'unauthenticated' });
    }
  });
});

describe('production with a JWKS and nothing saying whose tokens to accept', () => {
  it('refuses to start, one line per problem', () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_ENV: 'production',
      ...signedPolicyEnv(),
      JWT_JWKS_URI: 'https://idp.example/jwks',
    };
    for (const name of ['JWT_ISSUER', 'JWT_AUDIENCE', 'OIDC_ISSUER', 'OIDC_CLIENT_ID', 'JWT_SECRET']) delete env[name];
    const started = spawnSync(process.execPath, [path.join(__dirname, '../../dist/src/main.js')], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(started.status).toBe(1);
    expect(started.stderr.trimEnd().split('\n')).toEqual([
      'invalid configuration:',
      expect.stringMatching(/^ {2}JWT_ISSUER: production accepts the tokens of one issuer only: set JWT_ISSUER/),
      expect.stringMatching(/^ {2}JWT_AUDIENCE: production accepts only tokens meant for this service: set JWT_AUDIENCE/),
    ]);
  });
});
