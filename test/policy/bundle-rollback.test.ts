import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { untar } from '../../src/policy/bundles/read';
import { verifyBundle } from '../../src/policy/bundles/verify';
import { bundleServer, buildBundle, keyPair, reissued, scratchDir } from '../support/policy-bundles';
import { startService, type TestService } from '../support/service';

/**
 * Issue 25 item 5: a bundle server re-serving an older, validly signed bundle rolled the policy
 * back. The build now writes when a bundle was issued into its signed `.manifest`
 * (`metadata.issued_at`), and a signed bundle older than the serving one, or not saying when it
 * was issued, or claiming the serving one's instant under another revision, is refused: the
 * serving revision keeps deciding, the ETag stays, the refusal is logged and counted.
 * POLICY_BUNDLE_ALLOW_ROLLBACK=true lets an operator go back; unsigned development bundles are not
 * judged; POLICY_BUNDLE_MIN_ISSUED_AT is the floor across a restart.
 */
const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-of-at-least-32-characters' };
const work = scratchDir('bundle-rollback-');
const rsa = keyPair(work, 'rsa');
const JANUARY = '2025-01-01T00:00:00.000Z';
const FEBRUARY = '2025-02-01T00:00:00.000Z';
let builtAt: { before: number; after: number };
let built: Buffer;
let older: Buffer;
let newer: Buffer;
let newest: Buffer;
let rival: Buffer;
let undated: Buffer;

beforeAll(() => {
  const before = Date.now();
  built = buildBundle(work, 'built', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-built' });
  builtAt = { before, after: Date.now() };
  older = buildBundle(work, 'older', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-a', POLICY_ISSUED_AT: JANUARY });
  newer = reissued(older, { revision: 'rev-b', issuedAt: FEBRUARY }, rsa.privateFile);
  newest = reissued(older, { revision: 'rev-c', issuedAt: '2025-03-01T00:00:00Z' }, rsa.privateFile);
  rival = reissued(older, { revision: 'rev-rival', issuedAt: FEBRUARY }, rsa.privateFile);
  undated = reissued(older, { revision: 'rev-undated' }, rsa.privateFile);
}, 120_000);

/** The lines of one metric family on /metrics (its samples, with their labels). */
async function samples(service: TestService, name: string): Promise<string[]> {
  const text = (await service.http.get('/metrics').expect(200)).text;
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

const rollbacks = async (service: TestService) =>
  Number((await samples(service, 'policy_bundle_refusals_total')).find((l) => l.includes('reason="rollback"'))?.split(' ')[1]);

const issuedAt = async (bundle: Buffer) =>
  (JSON.parse((await untar(bundle)).get('.manifest')!.toString('utf8')) as { metadata?: { issued_at?: string } }).metadata?.issued_at;

describe('the build', () => {
  it('writes when the bundle was issued into its manifest, under the signature; POLICY_ISSUED_AT pins it', async () => {
    const stamp = Date.parse((await issuedAt(built)) ?? '');
    expect(stamp).toBeGreaterThanOrEqual(builtAt.before);
    expect(stamp).toBeLessThanOrEqual(builtAt.after);
    const files = await untar(built);
    expect(() => verifyBundle(files, { publicKeys: [rsa.publicPem] })).not.toThrow();
    expect(await issuedAt(older)).toBe(JANUARY);
  });
});

describe('a production service polling a bundle server that re-serves an older signed bundle', () => {
  let server: Awaited<ReturnType<typeof bundleServer>>;
  let service: TestService;

  beforeAll(async () => {
    server = await bundleServer(newer, 'b');
    service = await startService({ ...production, POLICY_BUNDLE_URL: server.url, POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem });
  });
  afterAll(async () => {
    await service.close();
    await server.close();
  });

  it('refuses it: rev-b keeps serving, /readyz, /metrics and the log name both revisions and times, the ETag stays', async () => {
    expect((await service.http.get('/readyz').expect(200)).body).toMatchObject({ policyRevision: 'rev-b', policyLastError: null });
    const before = await rollbacks(service);
    server.publish(older, 'a');
    expect(await service.deps.policy.reload()).toBe(false);

    const ready = await service.http.get('/readyz').expect(200);
    expect(ready.body).toMatchObject({ status: 'ready', policyRevision: 'rev-b' });
    const why = `bundle rev-a (issued ${JANUARY}) is older than the serving rev-b (issued ${FEBRUARY})`;
    expect(ready.body.policyLastError.message).toContain(why);
    expect(await samples(service, 'policy_revision_info')).toEqual(['policy_revision_info{revision="rev-b"} 1']);
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([
      'policy_last_load_failure_info{refused_revision="rev-a",error="rollback"} 1',
    ]);
    expect(await rollbacks(service)).toBe(before + 1);
    const refusal = service.logs
      .map((line) => JSON.parse(line) as { refusedRevision?: string; keptRevision?: string; err?: { message: string } })
      .find((entry) => entry.refusedRevision === 'rev-a');
    expect(refusal).toMatchObject({ keptRevision: 'rev-b', err: { message: expect.stringContaining(why) } });

    // Refused, so not taken as published: asked for again in full, not answered 304.
    expect(await service.deps.policy.reload()).toBe(false);
    expect(server.statuses.slice(-2)).toEqual([200, 200]);
    expect(await rollbacks(service)).toBe(before + 2);
  });

  it.each([
    ['one that says no issued_at', () => undated, 'rev-undated', /bundle rev-undated says no issued_at/],
    ['one of the same instant under another revision', () => rival, 'rev-rival', /bundle rev-rival .* claims the instant of/],
  ])('refuses %s as well: it cannot be shown newer', async (_label, bundle, revision, message) => {
    server.publish(bundle(), revision);
    expect(await service.deps.policy.reload()).toBe(false);
    const ready = await service.http.get('/readyz').expect(200);
    expect(ready.body.policyRevision).toBe('rev-b');
    expect(ready.body.policyLastError.message).toMatch(message);
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([
      `policy_last_load_failure_info{refused_revision="${revision}",error="rollback"} 1`,
    ]);
  });

  it('loads a newer bundle, which is then the floor', async () => {
    server.publish(newest, 'c');
    expect(await service.deps.policy.reload()).toBe(true);
    expect((await service.http.get('/readyz').expect(200)).body).toMatchObject({ policyRevision: 'rev-c', policyLastError: null });
    server.publish(newer, 'b');
    expect(await service.deps.policy.reload()).toBe(false);
    expect((await service.http.get('/readyz').expect(200)).body.policyRevision).toBe('rev-c');
  });
});

describe('going back on purpose, and the floor across a restart', () => {
  let server: Awaited<ReturnType<typeof bundleServer>>;

  beforeAll(async () => {
    server = await bundleServer(newer, 'b');
  });
  afterAll(() => server.close());

  it('POLICY_BUNDLE_ALLOW_ROLLBACK=true loads the older bundle', async () => {
    server.publish(newer, 'b');
    const service = await startService({
      ...production,
      POLICY_BUNDLE_URL: server.url,
      POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem,
      POLICY_BUNDLE_ALLOW_ROLLBACK: 'true',
    });
    try {
      expect((await service.http.get('/readyz').expect(200)).body.policyRevision).toBe('rev-b');
      server.publish(older, 'a');
      expect(await service.deps.policy.reload()).toBe(true);
      expect((await service.http.get('/readyz').expect(200)).body).toMatchObject({ policyRevision: 'rev-a', policyLastError: null });
    } finally {
      await service.close();
    }
  });

  it('POLICY_BUNDLE_MIN_ISSUED_AT: a fresh start refuses a bundle issued before it, and loads one issued at or after', async () => {
    server.publish(older, 'a');
    const service = await startService({
      ...production,
      POLICY_BUNDLE_URL: server.url,
      POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem,
      POLICY_BUNDLE_MIN_ISSUED_AT: FEBRUARY,
    });
    try {
      const refused = await service.http.get('/readyz').expect(503);
      expect(refused.body.policyRevision).toBeNull();
      expect(refused.body.policyLastError.message).toContain(`bundle rev-a (issued ${JANUARY}) is older than POLICY_BUNDLE_MIN_ISSUED_AT`);
      server.publish(rival, 'rival');
      expect(await service.deps.policy.reload()).toBe(true);
      expect((await service.http.get('/readyz').expect(200)).body.policyRevision).toBe('rev-rival');
    } finally {
      await service.close();
    }
  });

  it('POLICY_BUNDLE_MIN_ISSUED_AT must be an RFC 3339 time', () => {
    expect(() => loadConfig({ POLICY_BUNDLE_MIN_ISSUED_AT: 'last tuesday' })).toThrow(ConfigError);
    expect(() => loadConfig({ POLICY_BUNDLE_MIN_ISSUED_AT: 'last tuesday' })).toThrow(/POLICY_BUNDLE_MIN_ISSUED_AT/);
  });
});

describe('a bundle file', () => {
  it('is held to the same order: an older signed bundle renamed over it is refused', async () => {
    const live = path.join(work, 'live.tar.gz');
    writeFileSync(live, newer);
    const service = await startService({ POLICY_BUNDLE_PATH: live, POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem });
    try {
      writeFileSync(`${live}.next`, older);
      renameSync(`${live}.next`, live);
      expect(await service.deps.policy.reload()).toBe(false);
      const ready = await service.http.get('/readyz').expect(200);
      expect(ready.body.policyRevision).toBe('rev-b');
      expect(ready.body.policyLastError.message).toMatch(/refused as a rollback/);
    } finally {
      await service.close();
    }
  });

  it('unsigned, in development, is not judged by a claim no one signed: an older one loads as before', async () => {
    const live = path.join(work, 'live-unsigned.tar.gz');
    writeFileSync(live, reissued(older, { revision: 'rev-b-unsigned', issuedAt: FEBRUARY }));
    const service = await startService({ POLICY_BUNDLE_PATH: live });
    try {
      expect((await service.http.get('/readyz').expect(200)).body.policyRevision).toBe('rev-b-unsigned');
      writeFileSync(`${live}.next`, reissued(older, { revision: 'rev-a-unsigned', issuedAt: JANUARY }));
      renameSync(`${live}.next`, live);
      expect(await service.deps.policy.reload()).toBe(true);
      expect((await service.http.get('/readyz').expect(200)).body.policyRevision).toBe('rev-a-unsigned');
    } finally {
      await service.close();
    }
  });
});
