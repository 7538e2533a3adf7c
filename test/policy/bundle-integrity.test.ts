import { copyFileSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../src/kernel/log';
import { PolicyEngine } from '../../src/policy/engine';
import { BundleHttpSource } from '../../src/policy/sources';
import { bundleServer, buildBundle, keyPair, repack, scratchDir } from '../support/policy-bundles';
import { startService, type TestService } from '../support/service';

/**
 * Issue 11: an incomplete bundle is refused even when its signature is good (the old revision
 * keeps serving, /readyz and /metrics say why), and a bundle server that fails is polled less
 * often, then at the configured interval again once it answers.
 */
const work = scratchDir('bundle-integrity-');
const rsa = keyPair(work, 'rsa');
let signed: Buffer;
let unsigned: Buffer;

beforeAll(() => {
  signed = buildBundle(work, 'signed', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-1' });
  unsigned = buildBundle(work, 'unsigned', { POLICY_REVISION: 'rev-unsigned' });
}, 120_000);

/** The manifest with every entrypoint after the first moved to a second module. */
function twoModules(dir: string): void {
  copyFileSync(path.join(dir, 'policy.wasm'), path.join(dir, 'second.wasm'));
  const manifest = JSON.parse(readFileSync(path.join(dir, '.manifest'), 'utf8')) as { wasm: Array<{ module: string }> };
  manifest.wasm.forEach((entry, i) => (entry.module = i === 0 ? '/policy.wasm' : '/second.wasm'));
  writeFileSync(path.join(dir, '.manifest'), JSON.stringify(manifest));
}

describe('incomplete bundles', () => {
  const live = path.join(work, 'live.tar.gz');
  let service: TestService;

  beforeAll(async () => {
    writeFileSync(live, signed);
    service = await startService({ POLICY_BUNDLE_PATH: live, POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem });
  });
  afterAll(() => service.close());

  it.each([
    [
      'holding no policy.wasm, signed as it is',
      () => repack(signed, (dir) => rmSync(path.join(dir, 'policy.wasm')), { key: rsa.privateFile }),
      /the bundle holds no policy\.wasm/,
      'incomplete',
    ],
    [
      'missing a file its signature lists',
      () => repack(signed, (dir) => rmSync(path.join(dir, 'data.json'))),
      /signed files missing from the bundle: data\.json/,
      'incomplete',
    ],
    [
      'holding two WASM modules, signed as it is',
      () => repack(signed, twoModules, { key: rsa.privateFile }),
      /holds 2 WASM modules; one is expected/,
      'invalid_bundle',
    ],
  ])('refuses a bundle %s: rev-1 keeps serving', async (_label, bundle, message, kind) => {
    writeFileSync(`${live}.next`, bundle());
    renameSync(`${live}.next`, live);
    try {
      expect(await service.deps.policy.reload()).toBe(false);
      const ready = await service.http.get('/readyz').expect(200);
      expect(ready.body.policyRevision).toBe('rev-1');
      expect(ready.body.policyLastError.message).toMatch(message);
      const metrics = (await service.http.get('/metrics')).text;
      expect(metrics).toContain(`policy_last_load_failure_info{refused_revision="rev-1",error="${kind}"} 1`);
    } finally {
      writeFileSync(`${live}.next`, signed);
      renameSync(`${live}.next`, live);
      expect(await service.deps.policy.reload()).toBe(true);
    }
  });
});

describe('polling a bundle server that fails', () => {
  const POLL_MS = 100;
  let server: Awaited<ReturnType<typeof bundleServer>>;

  beforeAll(async () => {
    server = await bundleServer(signed, 'rev-1');
  });
  afterAll(() => server.close());

  /** Every one of many draws lies within ±20 % (the jitter) of `base`. */
  function expectNextPollAround(source: BundleHttpSource, base: number): void {
    const draws = Array.from({ length: 50 }, () => source.nextPollMs());
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
    expect(Math.max(...draws)).toBeLessThanOrEqual(Math.ceil(base * 1.2));
  }

  it('doubles the interval per failure (a 500, a refused bundle), up to 5 minutes, and resets on success', async () => {
    const source = new BundleHttpSource(
      server.url,
      { keys: { publicKeys: [rsa.publicPem] }, required: true },
      { pollMs: POLL_MS, timeoutMs: 2000 },
    );
    const engine = new PolicyEngine({ source, log: createLogger('silent'), decisionLog: 'off' });
    expect(await engine.reload()).toBe(true);
    expectNextPollAround(source, POLL_MS);

    server.fail(true);
    for (let failures = 1; failures <= 3; failures += 1) {
      expect(await engine.reload()).toBe(false);
      expectNextPollAround(source, POLL_MS * 2 ** failures);
    }
    server.fail(false);
    server.publish(unsigned, 'rev-unsigned');
    expect(await engine.reload()).toBe(false);
    expectNextPollAround(source, POLL_MS * 2 ** 4);

    server.publish(signed, 'rev-1');
    expect(await engine.reload()).toBe(true);
    expectNextPollAround(source, POLL_MS);

    server.fail(true);
    for (let i = 0; i < 20; i += 1) await engine.reload();
    expectNextPollAround(source, 300_000);
    server.fail(false);
    expect(await engine.reload()).toBe(true);
    expectNextPollAround(source, POLL_MS);
    expect(engine.revision).toBe('rev-1');
  });

  it('a bundle the engine refuses counts as a failure, and its ETag is not taken: it is fetched again, not 304', async () => {
    const source = new BundleHttpSource(
      server.url,
      { keys: { publicKeys: [rsa.publicPem] }, required: true },
      { pollMs: POLL_MS, timeoutMs: 2000 },
    );
    const engine = new PolicyEngine({ source, log: createLogger('silent'), decisionLog: 'off' });
    server.publish(signed, 'rev-1');
    expect(await engine.reload()).toBe(true);
    // Well signed, but its module is not WebAssembly: only the engine can tell.
    const broken = repack(signed, (dir) => writeFileSync(path.join(dir, 'policy.wasm'), 'not wasm'), { key: rsa.privateFile });
    server.publish(broken, 'rev-broken');
    expect(await engine.reload()).toBe(false);
    expect(engine.lastFailure?.message).toMatch(/not a loadable policy module/);
    expectNextPollAround(source, POLL_MS * 2);
    expect(await engine.reload()).toBe(false);
    expect(server.statuses.slice(-2)).toEqual([200, 200]);
    expect(engine.revision).toBe('rev-1');
  });
});
