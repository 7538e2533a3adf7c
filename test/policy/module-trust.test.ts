import { chmodSync, copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { createLogger } from '../../src/kernel/log';
import { PolicyEngine } from '../../src/policy/engine';
import { signedPolicyEnv } from '../support/policy-bundles';
import { startService } from '../support/service';

/**
 * Issue 11: signatures are mandatory in production, so production never loads the unsigned bare
 * module; before, it was trusted by file ownership alone (an allow-all module written over it by
 * its owner would have been loaded). Development and tests still load it.
 */
const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-of-at-least-32-characters' };

function moduleCopy(mode: number): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'policy-trust-')), 'policy.wasm');
  copyFileSync('build/policy/policy.wasm', file);
  chmodSync(file, mode);
  return file;
}

function configRefusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('production and the bare module', () => {
  it.each([
    ['by default', {}],
    ['named by POLICY_WASM_PATH', { POLICY_WASM_PATH: 'build/policy/policy.wasm' }],
  ])('refuses to start on the bare module %s, naming the bundle settings', async (_label, env) => {
    const message = configRefusal({ ...production, ...env });
    expect(message).toMatch(/^ {2}POLICY_BUNDLE_PATH: production loads only a signed OPA bundle/m);
    expect(message).toMatch(/POLICY_BUNDLE_PUBLIC_KEY or POLICY_BUNDLE_SECRET/);
    await expect(startService({ ...production, ...env })).rejects.toThrow(ConfigError);
  });

  it('starts on a signed bundle, and refuses a bundle without a key to verify it', async () => {
    const { POLICY_BUNDLE_PATH } = signedPolicyEnv();
    expect(configRefusal({ ...production, POLICY_BUNDLE_PATH })).toMatch(/^ {2}POLICY_BUNDLE_PUBLIC_KEY: production verifies/m);
    const service = await startService({ ...production, ...signedPolicyEnv() });
    try {
      expect((await service.http.get('/readyz').expect(200)).body.policySource).toBe(POLICY_BUNDLE_PATH);
    } finally {
      await service.close();
    }
  });

  it('outside production loads the bare module, whoever may write it (a developer’s own build)', async () => {
    const service = await startService({ POLICY_WASM_PATH: moduleCopy(0o666) });
    try {
      expect((await service.http.get('/readyz')).status).toBe(200);
    } finally {
      await service.close();
    }
  });
});

describe('the ownership check kept as a second net (requireTrustedFile)', () => {
  const engineOn = (file: string) =>
    new PolicyEngine({ path: file, log: createLogger('silent'), decisionLog: 'off', requireTrustedFile: true });

  it.each([
    ['world-writable', 0o666],
    ['group-writable', 0o664],
  ])('refuses a %s module', async (_label, mode) => {
    const engine = engineOn(moduleCopy(mode));
    expect(await engine.reload()).toBe(false);
    expect(engine.lastFailure?.message).toMatch(/writable by its group or by others/);
  });

  it('loads a module writable by its owner only, and refuses it once someone else may write it', async () => {
    const file = moduleCopy(0o644);
    const engine = engineOn(file);
    expect(await engine.reload()).toBe(true);
    const before = engine.revision;
    chmodSync(file, 0o666);
    expect(await engine.reload()).toBe(false);
    expect(engine.revision).toBe(before);
  });
});
