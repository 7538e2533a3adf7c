import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { artifactOf, untar } from '../../src/policy/bundles/read';
import { verifyBundle } from '../../src/policy/bundles/verify';
import { buildBundle as buildIn, keyPair as keyPairIn, repack, scratchDir } from '../support/policy-bundles';
import { startService, type TestService } from '../support/service';

/**
 * CONTRACT §11: the policy as an OPA bundle, built and signed by the pinned `opa build`, verified
 * here as OPA verifies it, served by a real HTTP bundle server the test runs (ETag, 304, 500,
 * slow), picked up by two replicas; refused unsigned in production.
 */
const work = scratchDir('bundles-');
const keyPair = (type: 'rsa' | 'ec') => keyPairIn(work, type);
const buildBundle = (name: string, env: Record<string, string>) => buildIn(work, name, env);

/** The bundle with one file changed (or added), repacked: its signature no longer covers it. */
const tampered = (bundle: Buffer, file: string, content: Buffer) => repack(bundle, (dir) => writeFileSync(path.join(dir, file), content));

const rsa = keyPair('rsa');
const rotated = keyPair('ec');
const secret = 'a-shared-bundle-signing-secret-of-32+chars';
let signed: Buffer;
let signedV2: Buffer;
let signedByRotatedKey: Buffer;
let hmacSigned: Buffer;
let unsigned: Buffer;

beforeAll(() => {
  signed = buildBundle('signed', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-1' });
  signedV2 = buildBundle('signed-v2', {
    POLICY_SIGNING_KEY: rsa.privateFile,
    POLICY_REVISION: 'rev-2',
    ORG_POLICY_MODES: 'broker.check.protected_branches=enforce',
  });
  signedByRotatedKey = buildBundle('rotated', {
    POLICY_SIGNING_KEY: rotated.privateFile,
    POLICY_SIGNING_ALG: 'ES256',
    POLICY_REVISION: 'rev-3',
  });
  hmacSigned = buildBundle('hmac', { POLICY_SIGNING_KEY: secret, POLICY_SIGNING_ALG: 'HS256', POLICY_REVISION: 'rev-h' });
  unsigned = buildBundle('unsigned', { POLICY_REVISION: 'rev-unsigned' });
}, 120_000);

describe('verifying a bundle as OPA does', () => {
  it('accepts what opa build signed: RS256, ES256 and HS256, with the manifest revision', async () => {
    const files = await untar(signed);
    expect(() => verifyBundle(files, { publicKeys: [rsa.publicPem] })).not.toThrow();
    expect(artifactOf(files).revision).toBe('rev-1');
    const rotatedFiles = await untar(signedByRotatedKey);
    expect(() => verifyBundle(rotatedFiles, { publicKeys: [rsa.publicPem, rotated.publicPem] })).not.toThrow();
    const hmacFiles = await untar(hmacSigned);
    expect(() => verifyBundle(hmacFiles, { publicKeys: [], secret })).not.toThrow();
  });

  it.each([
    ['unsigned', () => unsigned, /not signed/],
    ['signed with another key', () => signedByRotatedKey, /does not verify/],
    ['a changed module', () => tampered(signed, 'policy.wasm', Buffer.from('not wasm')), /policy.wasm: digest mismatch/],
    ['a changed manifest', () => tampered(signed, '.manifest', Buffer.from('{"revision":"evil"}')), /.manifest: digest mismatch/],
    ['an added file', () => tampered(signed, 'extra.rego', Buffer.from('package extra')), /not covered by the bundle signature/],
  ])('refuses a bundle %s', async (_label, bundle, reason) => {
    const files = await untar(bundle());
    expect(() => verifyBundle(files, { publicKeys: [rsa.publicPem] })).toThrow(reason);
  });
});

describe('a bundle server', () => {
  let server: Server;
  let current: Buffer;
  let etag: string;
  let mode: 'ok' | 'fail' | 'slow' = 'ok';
  const requests: Array<{ ifNoneMatch?: string; status: number }> = [];
  let replicas: TestService[] = [];

  function publish(bundle: Buffer, tag: string) {
    current = bundle;
    etag = `"${tag}"`;
  }

  beforeAll(async () => {
    publish(signed, 'rev-1');
    server = createServer((req, res) => {
      const ifNoneMatch = req.headers['if-none-match'];
      const answer = (status: number, body?: Buffer) => {
        requests.push({ ifNoneMatch, status });
        res.writeHead(status, status === 200 ? { etag, 'content-type': 'application/gzip' } : {});
        res.end(body);
      };
      if (mode === 'fail') return answer(500);
      if (mode === 'slow') return void setTimeout(() => answer(200, current), 1500);
      if (ifNoneMatch === etag) return answer(304);
      answer(200, current);
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bundles/policy.tar.gz`;
    const env = {
      POLICY_BUNDLE_URL: url,
      POLICY_BUNDLE_POLL_MS: '150',
      POLICY_BUNDLE_TIMEOUT_MS: '500',
      POLICY_BUNDLE_PUBLIC_KEY: `${rsa.publicPem}\n${rotated.publicPem}`,
      POLICY_WATCH: 'true',
    };
    replicas = [await startService(env), await startService(env)];
  }, 60_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.close()));
    await new Promise((resolve) => server.close(resolve));
  });

  const revisions = async () => Promise.all(replicas.map(async (r) => (await r.http.get('/readyz')).body.policyRevision as string));

  async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms = 5000): Promise<T> {
    const until = Date.now() + ms;
    let value = await read();
    while (!ok(value) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      value = await read();
    }
    return value;
  }

  it('serves the signed bundle on both replicas, and polls with its ETag (304 while unchanged)', async () => {
    expect(await revisions()).toEqual(['rev-1', 'rev-1']);
    await eventually(
      () => Promise.resolve(requests.filter((r) => r.status === 304).length),
      (n) => n >= 2,
    );
    expect(requests.filter((r) => r.status === 304).every((r) => r.ifNoneMatch === '"rev-1"')).toBe(true);
  });

  it('both replicas converge on a new revision within a few poll intervals', async () => {
    publish(signedV2, 'rev-2');
    expect(await eventually(revisions, (r) => r.every((x) => x === 'rev-2'), 3000)).toEqual(['rev-2', 'rev-2']);
  });

  it('a key rotation: a bundle signed by the new key loads where both keys are configured', async () => {
    publish(signedByRotatedKey, 'rev-3');
    expect(await eventually(revisions, (r) => r.every((x) => x === 'rev-3'), 3000)).toEqual(['rev-3', 'rev-3']);
  });

  it.each([
    ['an unsigned bundle', () => publish(unsigned, 'rev-unsigned'), /not signed/],
    ['a badly signed bundle', () => publish(tampered(signed, 'policy.wasm', Buffer.from('x')), 'rev-bad'), /digest mismatch/],
    ['a server error', () => (mode = 'fail'), /answered 500/],
    ['a server slower than the timeout', () => (mode = 'slow'), /abort|timeout/i],
  ])('refuses %s: the old revision keeps serving and /readyz names the error', async (_label, act, message) => {
    const before = await revisions();
    act();
    try {
      const ready = await eventually(
        () => replicas[0]!.http.get('/readyz'),
        (res) => message.test(res.body.policyLastError?.message ?? ''),
        4000,
      );
      expect(ready.body.policyLastError.message).toMatch(message);
      expect(ready.body.status).toBe('ready');
      expect(await revisions()).toEqual(before);
      const metrics = await replicas[0]!.http.get('/metrics');
      expect(metrics.text).toMatch(new RegExp(`policy_revision_info\\{revision="${before[0]}"\\} 1`));
    } finally {
      mode = 'ok';
      publish(signedByRotatedKey, 'rev-3');
    }
  });
});

describe('production', () => {
  it('refuses to start with a bundle and no verification key', async () => {
    await expect(
      startService({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), POLICY_BUNDLE_PATH: path.join(work, 'unsigned.tar.gz') }),
    ).rejects.toThrow(/POLICY_BUNDLE_PUBLIC_KEY/);
  });

  it('loads a signed bundle file and refuses an unsigned one, keeping nothing unsigned', async () => {
    const keys = { POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem, NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) };
    const good = await startService({ ...keys, POLICY_BUNDLE_PATH: path.join(work, 'signed.tar.gz') });
    try {
      expect((await good.http.get('/readyz')).body).toMatchObject({ status: 'ready', policyRevision: 'rev-1' });
    } finally {
      await good.close();
    }
    const bad = await startService({ ...keys, POLICY_BUNDLE_PATH: path.join(work, 'unsigned.tar.gz') });
    try {
      const ready = await bad.http.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ checks: { policy: false }, policyRevision: null });
      expect(ready.body.policyLastError.message).toMatch(/not signed/);
      const check = await bad.http.post('/api/broker/check').set({ Authorization: 'Bearer bkt_x' }).send({});
      expect(check.status).toBeGreaterThanOrEqual(400);
    } finally {
      await bad.close();
    }
  });
});
