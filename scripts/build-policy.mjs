// Compiles every Rego package under policies/ that defines `decision` into one WASM module with an
// entrypoint per package (`<package path>/decision`), using the pinned opa and a capabilities file
// that admits only WASM-native builtins. Writes build/policy/policy.wasm atomically, so a running
// service that watches the file never reads half a module.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
execFileSync('bash', [path.join(root, 'scripts/install-tools.sh')], { stdio: 'inherit' });
const opa = path.join(root, '.tools/bin/opa');

function regoFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return regoFiles(full);
    return name.endsWith('.rego') && !name.endsWith('_test.rego') ? [full] : [];
  });
}

const entrypoints = [];
for (const file of regoFiles(path.join(root, 'policies'))) {
  const source = readFileSync(file, 'utf8');
  const pkg = /^package\s+([\w.]+)/m.exec(source)?.[1];
  if (pkg && /^(default\s+)?decision\s*:?=/m.test(source)) entrypoints.push(`${pkg.replaceAll('.', '/')}/decision`);
}
entrypoints.sort();
if (entrypoints.length === 0) throw new Error('no package under policies/ defines a decision');

const work = mkdtempSync(path.join(tmpdir(), 'policy-build-'));
try {
  const bundle = path.join(work, 'bundle.tar.gz');
  execFileSync(
    opa,
    [
      'build', '--target', 'wasm', '--capabilities', path.join(root, 'tools/opa/capabilities.json'),
      '--ignore', '*_test.rego', '--output', bundle,
      ...entrypoints.flatMap((e) => ['--entrypoint', e]),
      path.join(root, 'policies'),
    ],
    { stdio: 'inherit' },
  );
  execFileSync('tar', ['-xzf', bundle, '-C', work, '/policy.wasm']);
  const outDir = path.join(root, 'build/policy');
  mkdirSync(outDir, { recursive: true });
  const staged = path.join(outDir, `.policy.wasm.${process.pid}`);
  copyFileSync(path.join(work, 'policy.wasm'), staged);
  // opa writes the bundle owner-only; a service running as another user must still read it.
  chmodSync(staged, 0o644);
  renameSync(staged, path.join(outDir, 'policy.wasm'));
  console.log(`build/policy/policy.wasm: ${entrypoints.length} entrypoints: ${entrypoints.join(', ')}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
