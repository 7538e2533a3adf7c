// Compiles the Rego under policies/ into one WASM module with an entrypoint per decision of the
// catalogue (src/kernel/decisions, read from the compiled dist/), with the pinned opa and a
// capabilities file that admits only WASM-native builtins. On the way it
//   - writes the JSON Schema of every decision's input to policies/schemas/<package path>.json,
//     which Rego packages name in their METADATA (`schemas: - input: schema.<package>`) and
//     `opa check --schema` holds them to;
//   - refuses a build whose `entrypoint: true` annotations are not exactly the catalogue;
//   - lists the security team's org packages (policies/org, CONTRACT §10) with their modes
//     (METADATA `custom: {mode: enforce|shadow|off}`, overridden by ORG_POLICY_MODES, e.g.
//     `broker.check.protected_branches=enforce,broker.check.working_hours=shadow`) into a
//     generated package `org_settings`, which lib.org reads: a mode is a policy change.
// Writes build/policy/policy.wasm (or POLICY_BUILD_OUT) atomically, so a running service never
// reads half a module.
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

// 3. The org packages and their modes.
const ORG_DECISIONS = ['broker.check', 'grants.create', 'grants.attenuate'];
const MODES = ['enforce', 'shadow', 'off'];
const { namespaces } = JSON.parse(
  execFileSync(opa, ['inspect', '--format', 'json', path.join(root, 'policies')], { encoding: 'utf8', maxBuffer: 64 << 20 }),
);
const packageAnnotations = new Map(
  (inspected.annotations ?? [])
    .filter((a) => a.annotations?.scope === 'package')
    .map((a) => [a.path.map((p) => p.value).join('.'), a.annotations]),
);
const overrides = new Map(
  (process.env.ORG_POLICY_MODES ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => entry.split('=').map((part) => part.trim())),
);
const modes = Object.fromEntries(ORG_DECISIONS.map((decision) => [decision, {}]));
const problems = [];
for (const [namespace, files] of Object.entries(namespaces)) {
  if (!namespace.startsWith('data.org.') || files.every((file) => file.endsWith('_test.rego'))) continue;
  const name = namespace.slice('data.org.'.length);
  const decision = ORG_DECISIONS.find((d) => name.startsWith(`${d}.`) && !name.slice(d.length + 1).includes('.'));
  if (!decision) {
    problems.push(`${namespace}: an org package is org.<decision>.<name> with a decision of ${ORG_DECISIONS.join(', ')}`);
    continue;
  }
  const annotations = packageAnnotations.get(namespace) ?? {};
  const schemaRefs = (annotations.schemas ?? []).map((s) => (s.schema ?? []).map((p) => p.value).join('.'));
  if (!schemaRefs.includes(`schema.${decision}`)) {
    problems.push(`${namespace}: declare the input schema in its METADATA: schemas: - input: schema.${decision}`);
  }
  const mode = overrides.get(name) ?? annotations.custom?.mode ?? 'enforce';
  if (!MODES.includes(mode)) problems.push(`${namespace}: mode ${JSON.stringify(mode)} is not one of ${MODES.join(', ')}`);
  overrides.delete(name);
  modes[decision][name.slice(decision.length + 1)] = mode;
}
for (const name of overrides.keys()) problems.push(`ORG_POLICY_MODES names ${name}, which is no org package`);
if (problems.length > 0) {
  console.error(`org packages:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}

// 4. The module.
const work = mkdtempSync(path.join(tmpdir(), 'policy-build-'));
try {
  const orgSettings = path.join(work, 'org_settings.rego');
  writeFileSync(
    orgSettings,
    `# Generated by scripts/build-policy.mjs from the METADATA of policies/org and ORG_POLICY_MODES.\n` +
      `package org_settings\n\nmodes := ${JSON.stringify(modes)}\n`,
  );
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
      orgSettings,
    ],
    { stdio: 'inherit' },
  );
  execFileSync('tar', ['-xzf', bundle, '-C', work, '/policy.wasm']);
  const out = path.resolve(process.env.POLICY_BUILD_OUT ?? path.join(root, 'build/policy/policy.wasm'));
  const outDir = path.dirname(out);
  mkdirSync(outDir, { recursive: true });
  const staged = path.join(outDir, `.policy.wasm.${process.pid}`);
  copyFileSync(path.join(work, 'policy.wasm'), staged);
  // opa writes the bundle owner-only; a service running as another user must still read it.
  chmodSync(staged, 0o644);
  renameSync(staged, out);
  console.log(`${path.relative(root, out)}: ${wanted.length} entrypoints: ${wanted.join(', ')}`);
  const listed = ORG_DECISIONS.flatMap((d) => Object.entries(modes[d]).map(([name, mode]) => `${d}.${name}=${mode}`));
  console.log(`org packages: ${listed.length > 0 ? listed.join(', ') : 'none'}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
