import path from 'node:path';
import { createLogger } from '../../src/kernel/log';
import { PolicyEngine } from '../../src/policy/engine';
import { runPolicySoak } from '../../src/policy/soak';

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
  const engine = new PolicyEngine(path.resolve(__dirname, '../../build/policy/policy.wasm'), createLogger('silent'), 'off');
  await engine.reload();
  const before = engine.wasmMemoryBytes!;
  engine.evaluate('pods/access/decision', { action: 'pod.read', caller: { kind: 'human', role: 'member', padding: 'x'.repeat(2 * 1024 * 1024) } });
  expect(engine.wasmMemoryBytes! - before).toBeGreaterThanOrEqual(2 * 1024 * 1024);
});
