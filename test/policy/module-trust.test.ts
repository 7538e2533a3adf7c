import { chmodSync, chownSync, copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startService } from '../support/service';

/**
 * Until bundles arrive signed, the production service trusts a module file only when it is owned
 * by root or by its own user and writable by no one else (issue 8, §5; CONTRACT Part II notes).
 * Before, an allow-all module written over the file was hot-loaded within a second.
 */
const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-of-at-least-32-characters' };

function moduleCopy(mode: number): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'policy-trust-')), 'policy.wasm');
  copyFileSync('build/policy/policy.wasm', file);
  chmodSync(file, mode);
  return file;
}

describe('policy module file trust in production', () => {
  it.each([
    ['world-writable', 0o666],
    ['group-writable', 0o664],
  ])('refuses a %s module: nothing is decided, every decision is a 503', async (_label, mode) => {
    const service = await startService({ ...production, POLICY_WASM_PATH: moduleCopy(mode) });
    try {
      const ready = await service.http.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.policy).toBe(false);
      const refused = service.logs.map((line) => JSON.parse(line)).find((line) => line.msg?.startsWith('policy module refused'));
      expect(refused.err.message).toMatch(/writable by its group or by others/);
      expect(refused.refusedRevision).toBeNull();
    } finally {
      await service.close();
    }
  });

  it('loads a module owned by its own user and writable by no one else, and logs its revision', async () => {
    const service = await startService({ ...production, POLICY_WASM_PATH: moduleCopy(0o644) });
    try {
      const ready = await service.http.get('/readyz').expect(200);
      const loaded = service.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'policy loaded');
      expect(loaded.revision).toBe(ready.body.policyRevision);
    } finally {
      await service.close();
    }
  });

  it('refuses a hot reload of a file someone else may now write, and keeps serving the module it has', async () => {
    const file = moduleCopy(0o644);
    const service = await startService({ ...production, POLICY_WASM_PATH: file });
    try {
      const before = (await service.http.get('/readyz').expect(200)).body.policyRevision;
      chmodSync(file, 0o666);
      expect(await service.deps.policy.reload()).toBe(false);
      expect((await service.http.get('/readyz').expect(200)).body.policyRevision).toBe(before);
    } finally {
      await service.close();
    }
  });

  const asRoot = process.getuid?.() === 0 ? it : it.skip;
  asRoot('refuses a module owned by another user (run as root, so the file can be given away)', async () => {
    const file = moduleCopy(0o644);
    chownSync(file, 65534, 65534);
    const service = await startService({ ...production, POLICY_WASM_PATH: file });
    try {
      expect((await service.http.get('/readyz')).status).toBe(503);
    } finally {
      await service.close();
    }
  });

  it('outside production does not judge the file (a developer’s own build)', async () => {
    const service = await startService({ POLICY_WASM_PATH: moduleCopy(0o666) });
    try {
      expect((await service.http.get('/readyz')).status).toBe(200);
    } finally {
      await service.close();
    }
  });
});
