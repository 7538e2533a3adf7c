import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { startLocalGitHub, type LocalGitHub } from '../support/github-server';

/**
 * The local GitHub the credential tests mint against refuses what GitHub's contract refuses: were
 * it to accept anything, the tests that pass through it would prove nothing.
 */
let github: LocalGitHub;
const installation = '31337';

beforeAll(async () => {
  github = await startLocalGitHub({
    [installation]: { account: 'acme', repositories: ['api'], permissions: { contents: 'read', metadata: 'read' } },
  });
});
afterAll(() => github.close());

const now = () => Math.floor(Date.now() / 1000);
const appJwt = (claims: Record<string, unknown> = {}, key: string = github.privateKeyPem, algorithm: jwt.Algorithm = 'RS256') =>
  jwt.sign({ iat: now() - 30, exp: now() + 540, iss: github.appId, ...claims }, key, { algorithm });

async function tokenRequest(options: { path?: string; token?: () => string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${github.url}${options.path ?? `/app/installations/${installation}/access_tokens`}`, {
    method: 'POST',
    headers: {
      accept: 'application/vnd.github+json',
      'content-type': 'application/json',
      'user-agent': 'local-github-test',
      authorization: `Bearer ${(options.token ?? appJwt)()}`,
      ...options.headers,
    },
    body: JSON.stringify(options.body ?? { repositories: ['api'], permissions: { contents: 'read' } }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

it('mints for a request that meets the contract, and answers per the 201 schema', async () => {
  const res = await tokenRequest();
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ token: expect.any(String), repositories: [expect.objectContaining({ full_name: 'acme/api' })] });
  expect(github.rejected).toEqual([]);
});

const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

it.each([
  ['a JWT signed by another key', { token: () => appJwt({}, otherKey) }, 401],
  ['a JWT for another app', { token: () => appJwt({ iss: '1' }) }, 401],
  ['an expired JWT', { token: () => appJwt({ iat: now() - 1200, exp: now() - 600 }) }, 401],
  ['a JWT longer than 10 minutes', { token: () => appJwt({ exp: now() + 3600 }) }, 401],
  ['an HS256 JWT', { token: () => jwt.sign({ iat: now(), exp: now() + 60, iss: github.appId }, 'secret', { algorithm: 'HS256' }) }, 401],
  ['no User-Agent', { headers: { 'user-agent': '' } }, 403],
  ['an Accept that is not JSON', { headers: { accept: 'text/html' } }, 415],
  ['repositories as a string', { body: { repositories: 'api' } }, 422],
  ['repository ids as strings', { body: { repository_ids: ['1'] } }, 422],
  ['a permission level GitHub does not know', { body: { permissions: { contents: 'owner' } } }, 422],
  ['an installation id that is not an integer', { path: '/app/installations/abc/access_tokens' }, 404],
  ['another operation', { path: '/app/installations/31337/tokens' }, 404],
])('refuses %s', async (_label, options, status) => {
  const rejected = github.rejected.length;
  const res = await tokenRequest(options);
  expect(res.status).toBe(status);
  expect(github.rejected.length).toBe(rejected + 1);
});

it('answers as GitHub does for what the installation cannot reach', async () => {
  expect((await tokenRequest({ body: { repositories: ['elsewhere'] } })).status).toBe(422);
  expect((await tokenRequest({ body: { repositories: ['api'], permissions: { contents: 'write' } } })).status).toBe(422);
  expect((await tokenRequest({ path: '/app/installations/999/access_tokens' })).status).toBe(404);
});
