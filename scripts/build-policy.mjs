// Compiles the Rego under policies/ into one WASM module with an entrypoint per decision of the
// catalogue (src/kernel/decisions, read from the compiled dist/), with the pinned opa and a
// capabilities file that admits only WASM-native builtins. On the way it
//   - writes the JSON Schema of every decision's input to policies/schemas/<package path>.json,
//     which Rego packages name in their METADATA (`schemas: - input: schema.<package>`) and
//     `opa check --schema` holds them to;
//   - refuses a build whose `entrypoint: true` annotations are not exactly the catalogue.
// Writes build/policy/policy.wasm atomically, so a running service never reads half a module.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
execFileSync('bash', [path.join(root, 'scripts/install-tools.sh')], { stdio: 'inherit' });
const opa = path.join(root, '.tools/bin/opa');
const { catalogue } = require(path.join(root, 'dist/src/kernel/decisions/catalogue.js'));
const { z } = require('zod');

// 1. One JSON Schema per decision input.
const schemaDir = path.join(root, 'policies/schemas');
for (const decision of catalogue) {
  const file = path.join(schemaDir, `${decision.packageName.replaceAll('.', '/')}.json`);
  const schema = {
    title: `input of ${decision.entrypoint}`,
    description: decision.description,
    ...z.toJSONSchema(decision.input, { target: 'draft-7' }),
  };
  mkdirSync(path.dirname(file), { recursive: true });
  const text = `${JSON.stringify(schema, null, 2)}\n`;
  let current = '';
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    // a new decision
  }
  if (current !== text) writeFileSync(file, text);
}

// 2. The Rego says which rules are entrypoints; they must be the catalogue's, no more, no less.
const inspected = JSON.parse(
  execFileSync(opa, ['inspect', '--annotations', '--format', 'json', path.join(root, 'policies')], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  }),
);
const annotated = (inspected.annotations ?? [])
  .filter((a) => a.annotations?.entrypoint)
  .map((a) =>
    a.path
      .map((p) => p.value)
      .filter((v) => v !== 'data')
      .join('/'),
  )
  .sort();
const wanted = catalogue.map((d) => d.entrypoint).sort();
if (JSON.stringify(annotated) !== JSON.stringify(wanted)) {
  console.error(`entrypoint annotations ${JSON.stringify(annotated)} differ from the decision catalogue ${JSON.stringify(wanted)}`);
  process.exit(1);
}

// 3. The module.
const work = mkdtempSync(path.join(tmpdir(), 'policy-build-'));
try {
  const bundle = path.join(work, 'bundle.tar.gz');
  execFileSync(
    opa,
    [
      'build',
      '--target',
      'wasm',
      '--capabilities',
      path.join(root, 'tools/opa/capabilities.json'),
      '--ignore',
      '*_test.rego',
      '--ignore',
      'schemas',
      '--output',
      bundle,
      ...wanted.flatMap((e) => ['--entrypoint', e]),
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
  console.log(`build/policy/policy.wasm: ${wanted.length} entrypoints: ${wanted.join(', ')}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
