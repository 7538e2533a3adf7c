// The policy gates: `test` (opa test with coverage, every line of every policy must be covered),
// `check` (opa check --strict against the WASM capabilities and the input schemas of
// policies/schemas, written by the build from the decision catalogue) and `lint` (Regal).
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
execFileSync('bash', [path.join(root, 'scripts/install-tools.sh'), 'opa', ...(process.argv[2] === 'lint' ? ['regal'] : [])], {
  stdio: 'inherit',
});
const bin = (tool) => path.join(root, '.tools/bin', tool);
const policies = path.join(root, 'policies');
const MIN_COVERAGE = Number(process.env.POLICY_MIN_COVERAGE ?? 100);

function run(tool, args) {
  const result = spawnSync(bin(tool), args, { stdio: 'inherit', cwd: root });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const gate = process.argv[2];
if (gate === 'test') {
  run('opa', ['test', '--capabilities', 'tools/opa/capabilities.json', '--ignore', 'schemas', policies]);
  const report = JSON.parse(
    execFileSync(bin('opa'), ['test', '--coverage', '--format', 'json', '--ignore', 'schemas', policies], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    }),
  );
  const uncovered = Object.entries(report.files ?? {}).flatMap(([file, cov]) =>
    (cov.not_covered ?? []).map((range) => `${path.relative(root, file)}:${range.start.row}-${range.end.row}`),
  );
  console.log(`policy coverage: ${Number(report.coverage).toFixed(1)}% (minimum ${MIN_COVERAGE}%)`);
  if (uncovered.length > 0) console.log(`not covered: ${uncovered.join(', ')}`);
  if (report.coverage < MIN_COVERAGE) process.exit(1);
} else if (gate === 'check') {
  run('opa', [
    'check',
    '--strict',
    '--capabilities',
    'tools/opa/capabilities.json',
    '--schema',
    path.join(policies, 'schemas'),
    '--ignore',
    'schemas',
    policies,
  ]);
  console.log('opa check --strict --schema policies/schemas: ok');
} else if (gate === 'lint') {
  run('regal', ['lint', policies]);
} else {
  console.error('usage: policy-check.mjs test|check|lint');
  process.exit(2);
}
