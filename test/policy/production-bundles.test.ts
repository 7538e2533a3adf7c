import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleServer, buildBundle, keyPair, scratchDir } from '../support/policy-bundles';
import { startService, type TestService } from '../support/service';
import { human, podWith } from '../support/world';

/**
 * Issue 11 in production mode, where signatures are mandatory: a service serving a signed bundle
 * from a real bundle server is offered an unsigned one, refuses it, keeps serving its revision
 * and says so in /readyz and /metrics alike; a signed bundle afterwards clears the refusal. An
 * HS256-signed bundle loads with POLICY_BUNDLE_SECRET.
 */
const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-of-at-least-32-characters' };
const work = scratchDir('production-bundles-');
const rsa = keyPair(work, 'rsa');
const secret = 'a-shared-bundle-signing-secret-of-32+chars';
let signed: Buffer;
let signedV2: Buffer;
let unsigned: Buffer;
let hmacSigned: Buffer;

beforeAll(() => {
  signed = buildBundle(work, 'signed', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-1' });
  signedV2 = buildBundle(work, 'signed-v2', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-2' });
  unsigned = buildBundle(work, 'unsigned', { POLICY_REVISION: 'rev-unsigned' });
  hmacSigned = buildBundle(work, 'hmac', { POLICY_SIGNING_KEY: secret, POLICY_SIGNING_ALG: 'HS256', POLICY_REVISION: 'rev-h' });
}, 120_000);

/** The lines of one metric family on /metrics (its samples, with their labels). */
async function samples(service: TestService, name: string): Promise<string[]> {
  const text = (await service.http.get('/metrics').expect(200)).text;
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

const value = (line: string | undefined) => Number(line?.split(' ').at(-1));

describe('a production service polling a bundle server', () => {
  let server: Awaited<ReturnType<typeof bundleServer>>;
  let service: TestService;

  beforeAll(async () => {
    server = await bundleServer(signed, 'rev-1');
    service = await startService({ ...production, POLICY_BUNDLE_URL: server.url, POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem });
  });
  afterAll(async () => {
    await service.close();
    await server.close();
  });

  it('serves the signed revision, with no load failure in /readyz or /metrics', async () => {
    const ready = await service.http.get('/readyz').expect(200);
    expect(ready.body).toMatchObject({ status: 'ready', policyRevision: 'rev-1', policyLastError: null });
    expect(await samples(service, 'policy_revision_info')).toEqual(['policy_revision_info{revision="rev-1"} 1']);
    expect(await samples(service, 'policy_last_load_failure_timestamp_seconds')).toEqual(['policy_last_load_failure_timestamp_seconds 0']);
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([]);
  });

  it('refuses an unsigned bundle: rev-1 keeps deciding; /readyz and /metrics name the refusal', async () => {
    const failuresBefore = value((await samples(service, 'policy_load_failures_total'))[0]);
    server.publish(unsigned, 'rev-unsigned');
    expect(await service.deps.policy.reload()).toBe(false);

    const ready = await service.http.get('/readyz').expect(200);
    expect(ready.body).toMatchObject({ status: 'ready', policyRevision: 'rev-1' });
    expect(ready.body.policyLastError.message).toMatch(/the bundle is not signed/);
    // Decisions are still made, by rev-1: a pod is created and read (pods/access).
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    await service.http.get(`/api/pods/${podId}`).set(owner.auth).expect(200);

    expect(await samples(service, 'policy_revision_info')).toEqual(['policy_revision_info{revision="rev-1"} 1']);
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([
      'policy_last_load_failure_info{refused_revision="rev-unsigned",error="unsigned"} 1',
    ]);
    const [stamp] = await samples(service, 'policy_last_load_failure_timestamp_seconds');
    // The same moment /readyz gives, in seconds.
    expect(value(stamp)).toBeCloseTo(Date.parse(ready.body.policyLastError.at) / 1000, 2);
    expect(value((await samples(service, 'policy_load_failures_total'))[0])).toBe(failuresBefore + 1);
  });

  it('a signed bundle then loads and clears the refusal, in /readyz and /metrics alike', async () => {
    server.publish(signedV2, 'rev-2');
    expect(await service.deps.policy.reload()).toBe(true);
    const ready = await service.http.get('/readyz').expect(200);
    expect(ready.body).toMatchObject({ policyRevision: 'rev-2', policyLastError: null });
    expect(await samples(service, 'policy_revision_info')).toEqual(['policy_revision_info{revision="rev-2"} 1']);
    expect(await samples(service, 'policy_last_load_failure_timestamp_seconds')).toEqual(['policy_last_load_failure_timestamp_seconds 0']);
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([]);
  });

  it('a server error is named by its class, and the next 304 (what serves is what is published) clears it', async () => {
    server.fail(true);
    expect(await service.deps.policy.reload()).toBe(false);
    expect((await service.http.get('/readyz').expect(200)).body.policyLastError.message).toMatch(/answered 500/);
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([
      'policy_last_load_failure_info{refused_revision="unknown",error="http_error"} 1',
    ]);
    server.fail(false);
    expect(await service.deps.policy.reload()).toBe(true);
    expect(server.statuses.at(-1)).toBe(304);
    expect((await service.http.get('/readyz').expect(200)).body).toMatchObject({ policyRevision: 'rev-2', policyLastError: null });
    expect(await samples(service, 'policy_last_load_failure_info')).toEqual([]);
  });
});

describe('a production service with an HS256 secret (POLICY_BUNDLE_SECRET)', () => {
  it('loads the bundle the secret signed, and refuses one signed by a key it does not hold', async () => {
    const file = path.join(work, 'live-hmac.tar.gz');
    writeFileSync(file, hmacSigned);
    const service = await startService({ ...production, POLICY_BUNDLE_PATH: file, POLICY_BUNDLE_SECRET: secret });
    try {
      expect((await service.http.get('/readyz').expect(200)).body).toMatchObject({ policyRevision: 'rev-h', policyLastError: null });
      // An RS256 bundle: a secret verifies HS* only, whoever signed it.
      writeFileSync(`${file}.next`, signed);
      renameSync(`${file}.next`, file);
      expect(await service.deps.policy.reload()).toBe(false);
      const ready = await service.http.get('/readyz').expect(200);
      expect(ready.body.policyRevision).toBe('rev-h');
      expect(ready.body.policyLastError.message).toMatch(/does not verify with any configured key/);
      expect(await samples(service, 'policy_last_load_failure_info')).toEqual([
        'policy_last_load_failure_info{refused_revision="rev-1",error="bad_signature"} 1',
      ]);
    } finally {
      await service.close();
    }
  });
});
