import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config';
import { bearer, startedService, startService } from '../support/service';

/**
 * The console's server side: its files under a strict Content-Security-Policy, and the
 * development sign-in (one-time links from `npm run admin -- console-link`), over HTTP against
 * the real Redis the codes live in.
 */
const run = promisify(execFile);
const cli = path.resolve(__dirname, '../../dist/src/admin/cli.js');

/** A console build of our own, so these tests do not depend on `npm run build:console`. */
function fakeBuild(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'console-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(
    path.join(dir, 'index.html'),
    '<!doctype html><title>console</title><script type="module" src="/console/assets/app-1.js"></script>',
  );
  writeFileSync(path.join(dir, 'assets', 'app-1.js'), 'console.log(1)');
  writeFileSync(path.join(dir, 'assets', 'notes.exe'), 'MZ');
  return dir;
}

// A key prefix of this file's own (under the run's, which the teardown clears): the demo users
// that `console-link --as` reads are one per prefix, and other files seed demo worlds too.
const REDIS_KEY_PREFIX = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}console-link:`;
const service = startedService(() => ({ overrides: { CONSOLE_DIR: fakeBuild(), REDIS_KEY_PREFIX } }));

async function admin(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, [cli, ...args], { env: { ...process.env, REDIS_KEY_PREFIX, ...env }, timeout: 20_000 });
}

const redeem = (code: unknown) =>
  service.http.post('/console/session').set('Content-Type', 'application/json').send(JSON.stringify({ code }));

describe('the console files', () => {
  it('serves the shell for every page, assets by name, each under the strict policy', async () => {
    for (const page of ['/console/', '/console/approvals', '/console/pods/pod_x/grants', '/console/sign-in']) {
      const answer = await service.http.get(page).expect(200);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.text).toContain('<title>console</title>');
      const csp = answer.headers['content-security-policy'];
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['cache-control']).toBe('no-cache');
    }
    const asset = await service.http.get('/console/assets/app-1.js').expect(200);
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(asset.headers['cache-control']).toContain('immutable');
    await service.http.get('/console/assets/app-1.js').set('If-None-Match', asset.headers.etag!).expect(304);
    await service.http.get('/console').expect(308).expect('Location', '/console/');
  });

  it('answers 404 for a missing asset or a file type it does not serve, never the shell or a file outside', async () => {
    for (const missing of ['/console/assets/nope.js', '/console/assets/notes.exe', '/console/assets/..%2f..%2fpackage.json']) {
      const answer = await service.http.get(missing).expect(404);
      expect(answer.body.code).toBe('not_found');
    }
    const dotted = await service.http.get('/console/../package.json');
    expect(dotted.text).not.toContain('"name": "grant-broker"');
    await service.http.post('/console/approvals').expect(405).expect('Allow', 'GET, HEAD');
  });

  it('tells the app how to sign in, and nothing secret', async () => {
    const config = await service.http.get('/console/config.json').expect(200);
    expect(config.body).toEqual({ oidc: null, links: true });
  });
});

describe('one-time console links', () => {
  it('prints a link for a demo user; its code signs in once, as that user, with a token the API takes', async () => {
    const { stdout: seeded } = await admin(['demo', '--json']);
    const world = JSON.parse(seeded) as { owner: { userId: string }; approval: { id: string } };
    const { stdout } = await admin(['console-link', '--as', 'owner'], { PORT: '8123', HOST: '0.0.0.0' });
    const link = new URL(stdout.trim());
    expect(`${link.origin}${link.pathname}`).toBe('http://127.0.0.1:8123/console/sign-in');
    const code = new URLSearchParams(link.hash.slice(1)).get('code')!;
    expect(code).toMatch(/^csl_[A-Za-z0-9_-]{43}$/);

    // Redis holds the code's hash, never the code, for at most ten minutes.
    const key = `console-link:${createHash('sha256').update(code).digest('hex')}`;
    const ttl = await service.deps.redis.pttl(key);
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);
    expect(await service.deps.redis.keys(`*${code}*`)).toEqual([]);

    const session = await redeem(code).expect(200);
    expect(session.headers['cache-control']).toBe('no-store');
    expect(session.body).toEqual({ token: expect.any(String), userId: world.owner.userId, expiresAt: expect.any(String) });
    const approval = await service.http.get(`/api/approvals/${world.approval.id}`).set(bearer(session.body.token)).expect(200);
    expect(approval.body.state).toBe('pending');

    // Single use: the same code again, on any replica, is refused.
    const again = await redeem(code).expect(401);
    expect(again.body.code).toBe('unauthenticated');
  });

  it('refuses unknown, malformed and oversized codes, other media types, and asks for a role', async () => {
    expect((await redeem(`csl_${'A'.repeat(43)}`)).status).toBe(401);
    for (const bad of [42, null, ['csl_x']]) expect((await redeem(bad)).status).toBe(400);
    expect((await redeem('csl_<script>')).status).toBe(401);
    await service.http.post('/console/session').set('Content-Type', 'text/plain').send('csl_x').expect(415);
    await service.http.post('/console/session').set('Content-Type', 'application/json').send('{"code":').expect(400);
    await service.http
      .post('/console/session')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ code: 'x'.repeat(4096) }))
      .expect(413);
    await service.http.get('/console/session').expect(405);
    await expect(admin(['console-link'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--as owner|member') });
  });

  it('is refused where the API verifies tokens from an identity provider', async () => {
    await expect(admin(['console-link', '--user', 'someone'], { JWT_JWKS_URI: 'http://127.0.0.1:1/jwks' })).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('OpenID Connect'),
    });
    const withProvider = await startService({ JWT_JWKS_URI: 'http://127.0.0.1:1/jwks' });
    try {
      const { code } = await withProvider.deps.consoleLinks.create('someone');
      const refused = await withProvider.http
        .post('/console/session')
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ code }));
      expect(refused.status).toBe(404);
    } finally {
      await withProvider.close();
    }
  });

  it('fails closed when Redis is away: 503, never a session', async () => {
    const away = await startService({ REDIS_URL: 'redis://127.0.0.1:1/0', CONSOLE_DIR: fakeBuild() });
    try {
      const answer = await away.http
        .post('/console/session')
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ code: `csl_${'B'.repeat(43)}` }));
      expect(answer.status).toBe(503);
      expect(answer.body.token).toBeUndefined();
    } finally {
      await away.close();
    }
  });
});

describe('the sign-in configuration', () => {
  const load = (env: Record<string, string>) => () => loadConfig({ ...env });
  it('wants OIDC_ISSUER and OIDC_CLIENT_ID together, the issuer keys to verify its tokens, and https in production', () => {
    expect(load({ OIDC_ISSUER: 'https://id.test' })).toThrow(/OIDC_CLIENT_ID: set OIDC_ISSUER and OIDC_CLIENT_ID together/);
    expect(load({ OIDC_ISSUER: 'https://id.test', OIDC_CLIENT_ID: 'console' })).toThrow(/JWT_JWKS_URI/);
    expect(
      load({ NODE_ENV: 'production', OIDC_ISSUER: 'http://id.test', OIDC_CLIENT_ID: 'console', JWT_JWKS_URI: 'https://id.test/jwks' }),
    ).toThrow(/OIDC_ISSUER: production signs people in over https only/);
    expect(load({ OIDC_ISSUER: 'https://id.test', OIDC_CLIENT_ID: 'console', JWT_JWKS_URI: 'https://id.test/jwks' })()).toMatchObject({
      OIDC_ISSUER: 'https://id.test',
      OIDC_CLIENT_ID: 'console',
    });
  });
});
