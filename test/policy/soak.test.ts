import path from 'node:path';
import { createLogger } from '../../src/kernel/log';
import { decisions } from '../../src/kernel/decisions/catalogue';
import { PolicyEngine } from '../../src/policy/engine';
import { runPolicySoak } from '../../scripts/policy-soak';

/**
 * A short run of `npm run soak:policy` (the full one does a million evaluations): repeated
 * evaluate() calls must not grow the module's memory (npm-opa-wasm issue 143).
 */
it('keeps the WASM memory flat over 50k evaluations with varying inputs', async () => {
  const report = await runPolicySoak({
    wasmPath: path.resolve(__dirname, '../../build/policy/policy.wasm'),
    evaluations: 50_000,
    sampleEvery: 10_000,
    warmup: 10_000,
  });
  expect(report.entrypoint).toMatch(/\/decision$/);
  expect(report.samples.map((s) => s.evaluations)).toEqual([0, 10_000, 20_000, 30_000, 40_000, 50_000]);
  expect(report.samples.every((s) => s.wasmBytes > 0)).toBe(true);
  expect(report.wasmGrowthBytes).toBe(0);
});

it('measures live memory: one evaluation with a 2 MiB input grows it (so flat above means flat)', async () => {
  const engine = new PolicyEngine({
    path: path.resolve(__dirname, '../../build/policy/policy.wasm'),
    log: createLogger('silent'),
    decisionLog: 'off',
  });
  await engine.reload();
  const before = engine.wasmMemoryBytes!;
  engine.evaluate(decisions.podsAccess, { action: `pod.read${'x'.repeat(2 * 1024 * 1024)}`, caller: { kind: 'human', role: 'member' } });
  expect(engine.wasmMemoryBytes! - before).toBeGreaterThanOrEqual(2 * 1024 * 1024);
});
