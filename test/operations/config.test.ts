import { ConfigError, DEVELOPMENT_JWT_SECRET, loadConfig } from '../../src/config';

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
  it('has local defaults: Postgres and Redis on 127.0.0.1, port 8080, the development secret', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      NODE_ENV: 'development',
      PORT: 8080,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/grant_broker',
      REDIS_URL: 'redis://127.0.0.1:6379/0',
      JWT_SECRET: DEVELOPMENT_JWT_SECRET,
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

  it('refuses the development JWT secret when NODE_ENV=production, whether defaulted or set', () => {
    expect(refusal({ NODE_ENV: 'production' })).toMatch(/JWT_SECRET: the development secret is refused in production/);
    expect(refusal({ NODE_ENV: 'production', JWT_SECRET: DEVELOPMENT_JWT_SECRET })).toMatch(/JWT_SECRET/);
  });

  it('accepts the development secret outside production', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).JWT_SECRET).toBe(DEVELOPMENT_JWT_SECRET);
  });

  it('accepts production with a JWKS URL, or with a strong secret of its own', () => {
    // Production also needs a signed policy bundle (test/policy/module-trust.test.ts).
    // …and a key of its own that seals approvals' arguments (test/approvals/readable-args.test.ts).
    const bundle = {
      POLICY_BUNDLE_PATH: 'bundle.tar.gz',
      POLICY_BUNDLE_SECRET: 'b'.repeat(32),
      APPROVAL_ARGS_KEY: Buffer.alloc(32, 7).toString('base64'),
    };
    const jwks = loadConfig({ NODE_ENV: 'production', ...bundle, JWT_JWKS_URI: 'https://idp.example/.well-known/jwks.json' });
    expect(jwks.JWT_JWKS_URI).toBe('https://idp.example/.well-known/jwks.json');
    expect(loadConfig({ NODE_ENV: 'production', ...bundle, JWT_SECRET: 'x'.repeat(48) }).JWT_SECRET).toBe('x'.repeat(48));
  });

  it('refuses a short JWT secret and a JWKS URL that is not http(s)', () => {
    expect(refusal({ JWT_SECRET: 'short' })).toMatch(/JWT_SECRET: must be at least 32 characters/);
    expect(refusal({ NODE_ENV: 'production', JWT_JWKS_URI: 'file:///etc/jwks.json' })).toMatch(/^ {2}JWT_JWKS_URI: /m);
  });
});
