import { generateKeyPairSync } from 'node:crypto';
import { inspect } from 'node:util';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, developmentSecretsFile, loadConfig } from '../../src/config';
import { trustedTokens } from '../../src/credentials/human-jwt';

/** Configuration is validated at start with one clear line per bad value (issue 2, item 3). */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it("has local defaults: loopback on port 8080, Postgres and Redis on 127.0.0.1, the installation's secrets", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: 8080,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/grant_broker',
      REDIS_URL: 'redis://127.0.0.1:6379/0',
      JWT_SECRET: JSON.parse(readFileSync(developmentSecretsFile('.grant-broker'), 'utf8')).jwtSecret,
      POLICY_WATCH: true,
    });
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '' }).PORT).toBe(8080);
  });

  it.each(['abc', '-1', '65536', '80.5'])('refuses PORT=%s, naming PORT', (port) => {
    expect(refusal({ PORT: port })).toMatch(/^ {2}PORT: /m);
  });

  it('accepts a valid PORT', () => {
    expect(loadConfig({ PORT: '3000' }).PORT).toBe(3000);
  });

  it.each(['not a url', 'mysql://root@127.0.0.1/app', '127.0.0.1:5432/db'])('refuses DATABASE_URL=%s, naming DATABASE_URL', (url) => {
    expect(refusal({ DATABASE_URL: url })).toMatch(/^ {2}DATABASE_URL: /m);
  });

  it('accepts postgres:// and postgresql:// URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://u:p@db:5432/x' }).DATABASE_URL).toBe('postgresql://u:p@db:5432/x');
  });

  it('refuses a non-Redis REDIS_URL', () => {
    expect(refusal({ REDIS_URL: 'http://127.0.0.1:6379' })).toMatch(/^ {2}REDIS_URL: /m);
  });

  it('names every bad value at once', () => {
    const message = refusal({ PORT: 'x', DATABASE_URL: 'nope', LOG_LEVEL: 'loud', POLICY_WATCH: 'yes' });
    for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'POLICY_WATCH']) expect(message).toMatch(new RegExp(`^ {2}${name}: `, 'm'));
  });

  it('wants a secret of its own in production: none is made for it', () => {
    expect(refusal({ NODE_ENV: 'production' })).toMatch(
      /^ {2}JWT_SECRET: production verifies human JWTs with a secret or keys of its own/m,
    );
    expect(refusal({ NODE_ENV: 'production' })).toMatch(/^ {2}APPROVAL_ARGS_KEY: production seals/m);
    expect(refusal({ NODE_ENV: 'production' })).toMatch(/^ {2}TRAIL_SIGNING_KEY: production signs the trail with a key of its own/m);
  });

  it('signs the trail with an Ed25519 key only, and makes one for an installation once', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    for (const key of [rsa, 'not a key']) {
      expect(refusal({ TRAIL_SIGNING_KEY: key })).toMatch(/^ {2}TRAIL_SIGNING_KEY: must be a PKCS#8 PEM Ed25519 private key/m);
    }
    const stateDir = path.join(mkdtempSync(path.join(tmpdir(), 'installation-')), 'state');
    const first = loadConfig({ NODE_ENV: 'test', DEVELOPMENT_STATE_DIR: stateDir, TRAIL_SIGNING_KEY: '' });
    expect(first.TRAIL_SIGNING_KEY).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(statSync(path.join(stateDir, 'trail-signing-key.pem')).mode & 0o777).toBe(0o600);
    expect(loadConfig({ NODE_ENV: 'test', DEVELOPMENT_STATE_DIR: stateDir, TRAIL_SIGNING_KEY: '' }).TRAIL_SIGNING_KEY).toBe(
      first.TRAIL_SIGNING_KEY,
    );
  });

  it('makes the secrets of an installation once, owner-only, and reads the same ones after', () => {
    const stateDir = path.join(mkdtempSync(path.join(tmpdir(), 'installation-')), 'state');
    const first = loadConfig({ NODE_ENV: 'test', DEVELOPMENT_STATE_DIR: stateDir });
    expect(first.JWT_SECRET.length).toBeGreaterThanOrEqual(32);
    expect(Buffer.from(first.APPROVAL_ARGS_KEY, 'base64')).toHaveLength(32);
    expect(statSync(developmentSecretsFile(stateDir)).mode & 0o777).toBe(0o600);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
    const again = loadConfig({ DEVELOPMENT_STATE_DIR: stateDir });
    expect([again.JWT_SECRET, again.APPROVAL_ARGS_KEY]).toEqual([first.JWT_SECRET, first.APPROVAL_ARGS_KEY]);
    // Another installation has secrets of its own; a configured value is used as it is.
    const other = loadConfig({ DEVELOPMENT_STATE_DIR: path.join(stateDir, 'other') });
    expect(other.JWT_SECRET).not.toBe(first.JWT_SECRET);
    expect(loadConfig({ DEVELOPMENT_STATE_DIR: stateDir, JWT_SECRET: 's'.repeat(40) }).JWT_SECRET).toBe('s'.repeat(40));
  });

  it('accepts production with a JWKS URL, or with a strong secret of its own', () => {
    // Production also needs a signed policy bundle (test/policy/module-trust.test.ts).
    // …and a key of its own that seals approvals' arguments (test/approvals/readable-args.test.ts).
    const bundle = {
      POLICY_BUNDLE_PATH: 'bundle.tar.gz',
      POLICY_BUNDLE_SECRET: 'b'.repeat(32),
      APPROVAL_ARGS_KEY: Buffer.alloc(32, 7).toString('base64'),
      TRAIL_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    };
    const jwks = loadConfig({
      NODE_ENV: 'production',
      ...bundle,
      JWT_JWKS_URI: 'https://idp.example/.well-known/jwks.json',
      JWT_ISSUER: 'https://idp.example/',
      JWT_AUDIENCE: 'https://broker.example/api',
    });
    expect(jwks.JWT_JWKS_URI).toBe('https://idp.example/.well-known/jwks.json');
    expect(loadConfig({ NODE_ENV: 'production', ...bundle, JWT_SECRET: 'x'.repeat(48) }).JWT_SECRET).toBe('x'.repeat(48));
  });

  it('refuses production with a JWKS but no issuer or audience, one line each, or takes them from the OIDC settings', () => {
    const production = {
      NODE_ENV: 'production',
      POLICY_BUNDLE_PATH: 'bundle.tar.gz',
      POLICY_BUNDLE_SECRET: 'b'.repeat(32),
      APPROVAL_ARGS_KEY: Buffer.alloc(32, 7).toString('base64'),
      TRAIL_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      JWT_JWKS_URI: 'https://idp.example/jwks',
    };
    expect(refusal(production).split('\n')).toEqual([
      'invalid configuration:',
      expect.stringMatching(/^ {2}JWT_ISSUER: production accepts the tokens of one issuer only/),
      expect.stringMatching(/^ {2}JWT_AUDIENCE: production accepts only tokens meant for this service/),
    ]);
    expect(refusal({ ...production, JWT_ISSUER: 'https://idp.example/' })).toMatch(/^ {2}JWT_AUDIENCE: /m);
    expect(refusal({ ...production, JWT_AUDIENCE: 'https://broker.example/api' })).toMatch(/^ {2}JWT_ISSUER: /m);
    const fromOidc = loadConfig({ ...production, OIDC_ISSUER: 'https://idp.example', OIDC_CLIENT_ID: 'console' });
    expect(trustedTokens(fromOidc)).toEqual({ issuer: 'https://idp.example', audiences: ['console'], clientId: 'console' });
    const both = loadConfig({ ...production, OIDC_ISSUER: 'https://idp.example', OIDC_CLIENT_ID: 'console', JWT_AUDIENCE: 'api' });
    expect(trustedTokens(both)).toEqual({ issuer: 'https://idp.example', audiences: ['api', 'console'], clientId: 'console' });
    const mismatch = { ...production, OIDC_ISSUER: 'https://idp.example', OIDC_CLIENT_ID: 'console', JWT_ISSUER: 'https://other.example' };
    expect(refusal(mismatch)).toMatch(/^ {2}JWT_ISSUER: differs from OIDC_ISSUER/m);
  });

  it('refuses a short JWT secret and a JWKS URL that is not http(s)', () => {
    expect(refusal({ JWT_SECRET: 'short' })).toMatch(/JWT_SECRET: must be at least 32 characters/);
    expect(refusal({ NODE_ENV: 'production', JWT_JWKS_URI: 'file:///etc/jwks.json' })).toMatch(/^ {2}JWT_JWKS_URI: /m);
  });
});

describe('GITHUB_APPS', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  it('reads each app with its key from the variable it names; apiUrl defaults to GitHub', () => {
    const config = loadConfig({ GITHUB_APPS: JSON.stringify({ acme: { appId: 12, privateKeyEnv: 'ACME_KEY' } }), ACME_KEY: rsa });
    const app = config.githubApps.get('acme')!;
    expect({ appId: app.appId, apiUrl: app.apiUrl }).toEqual({ appId: '12', apiUrl: 'https://api.github.com' });
    expect(app.privateKey.pem()).toBe(rsa);
  });

  it('never shows the private key: not in JSON, not when inspected', () => {
    const config = loadConfig({
      GITHUB_APPS: JSON.stringify({ acme: { appId: '12', privateKeyEnv: 'K' } }),
      K: rsa.replaceAll('\n', '\\n'),
    });
    const keyLine = rsa.split('\n')[1]!;
    expect(JSON.stringify([...config.githubApps.values()])).not.toContain(keyLine);
    expect(inspect(config, { depth: 10 })).not.toContain(keyLine);
    expect(config.githubApps.get('acme')!.privateKey.pem()).toBe(rsa);
  });

  it.each([
    [
      'an http apiUrl in production',
      {
        NODE_ENV: 'production',
        GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'K', apiUrl: 'http://github.internal' } }),
        K: rsa,
      },
      /GITHUB_APPS\.a\.apiUrl: production reaches GitHub over https only/,
    ],
    ['not JSON', { GITHUB_APPS: '{acme' }, /GITHUB_APPS: must be JSON/],
    [
      'both key sources',
      { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'K', privateKeyFile: '/k' } }) },
      /exactly one of privateKeyEnv and privateKeyFile/,
    ],
    ['no key source', { GITHUB_APPS: JSON.stringify({ a: { appId: 1 } }) }, /exactly one of privateKeyEnv and privateKeyFile/],
    [
      'an app id that is not a number',
      { GITHUB_APPS: JSON.stringify({ a: { appId: '1e3', privateKeyEnv: 'K' } }), K: rsa },
      /GITHUB_APPS\.a\.appId/,
    ],
    ['an unknown field', { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'K', secret: 'x' } }), K: rsa }, /GITHUB_APPS\.a/],
    [
      'an apiUrl that is not http(s)',
      { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'K', apiUrl: 'file:///etc' } }), K: rsa },
      /apiUrl/,
    ],
    [
      'a key variable that is not set',
      { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'MISSING' } }) },
      /privateKeyEnv \(MISSING\) is not set/,
    ],
    [
      'a key file that cannot be read',
      { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyFile: '/nonexistent/key.pem' } }) },
      /cannot be read/,
    ],
    [
      'a key that is not a key',
      { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'K' } }), K: 'hunter2' },
      /does not hold an RSA private key/,
    ],
    [
      'a key that is not RSA',
      { GITHUB_APPS: JSON.stringify({ a: { appId: 1, privateKeyEnv: 'K' } }), K: ec },
      /does not hold an RSA private key/,
    ],
  ])('refuses %s at start, naming the field', (_label, env, message) => {
    const text = refusal(env as Record<string, string>);
    expect(text).toMatch(message);
    expect(text).not.toContain('hunter2');
  });
});
