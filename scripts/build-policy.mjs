// Compiles the Rego under policies/ into one WASM module with an entrypoint per decision of the
// catalogue (src/kernel/decisions, read from the compiled dist/), with the pinned opa and a
// capabilities file that admits only WASM-native builtins. On the way it
//   - writes the JSON Schema of every decision's input to policies/schemas/<package path>.json,
//     which Rego packages name in their METADATA (`schemas: - input: schema.<package>`) and
//     `opa check --schema` holds them to;
//   - refuses a build whose `entrypoint: true` annotations are not exactly the catalogue;
//   - lists the security team's org packages (policies/org) with their modes
//     (METADATA `custom: {mode: enforce|shadow|off}`, overridden by ORG_POLICY_MODES, e.g.
//     `broker.check.protected_branches=enforce,broker.check.working_hours=shadow`) into a
//     generated package `org_settings`, which lib.org reads: a mode is a policy change; with
//     them what their denials say of themselves (METADATA `custom: {rule, unlock}`) and the tools
//     whose count they read (`custom: {counts: [tool, ...]}`);
//   - compiles `system/log/mask` too when a package `system.log` exists (decision log masking,
//     OPA's convention).
// Writes build/policy/policy.wasm (or POLICY_BUILD_OUT) and build/policy/bundle.tar.gz (or
// POLICY_BUNDLE_OUT) atomically, so a running service never reads half a file. The bundle is
// signed with POLICY_SIGNING_KEY (a private key file, or an HS* secret; POLICY_SIGNING_ALG) and,
// with POLICY_VERIFY_KEY (a public key file), verified before it is published: production loads
// nothing else (the Docker build passes the key as a BuildKit secret).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
execFileSync('bash', [path.join(root, 'scripts/install-tools.sh')], { stdio: 'inherit' });
const opa = path.join(root, '.tools/bin/opa');
// POLICY_SOURCES: another copy of policies/ (a candidate to weigh with `policy impact`, say).
const policiesDir = path.resolve(process.env.POLICY_SOURCES ?? path.join(root, 'policies'));
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
  execFileSync(opa, ['inspect', '--annotations', '--format', 'json', policiesDir], {
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
  execFileSync(opa, ['inspect', '--format', 'json', policiesDir], { encoding: 'utf8', maxBuffer: 64 << 20 }),
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
// What a package's denials say when they explain themselves: METADATA `custom: {rule, unlock}`.
const UNLOCKS = ['attenuate_from_parent', 'ask_connection_owner', 'request_approval', 'wait', 'none'];
const rules = Object.fromEntries(ORG_DECISIONS.map((decision) => [decision, {}]));
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
  const { rule, unlock, counts } = annotations.custom ?? {};
  const toolName = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
  if (counts !== undefined && !(Array.isArray(counts) && counts.every((tool) => typeof tool === 'string' && toolName.test(tool)))) {
    problems.push(`${namespace}: custom.counts is a list of tool names`);
  }
  if (rule !== undefined && (typeof rule !== 'string' || !/^[A-Za-z0-9_.-]{1,200}$/.test(rule))) {
    problems.push(`${namespace}: custom.rule ${JSON.stringify(rule)} is not an id of letters, digits and _ . -`);
  }
  if (unlock !== undefined && !UNLOCKS.includes(unlock)) problems.push(`${namespace}: custom.unlock is one of ${UNLOCKS.join(', ')}`);
  rules[decision][name.slice(decision.length + 1)] = {
    ...(rule !== undefined ? { rule } : {}),
    ...(unlock !== undefined ? { unlock } : {}),
    ...(counts !== undefined ? { counts } : {}),
  };
}
for (const name of overrides.keys()) problems.push(`ORG_POLICY_MODES names ${name}, which is no org package`);
if (problems.length > 0) {
  console.error(`org packages:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}

// The decision log's mask policy, as OPA names it (system.log.mask), when the Rego has one.
const maskEntrypoint = Object.entries(namespaces).some(
  ([namespace, files]) => namespace === 'data.system.log' && files.some((file) => !file.endsWith('_test.rego')),
)
  ? ['system/log/mask']
  : [];

// 4. The bundle and the module. The bundle is an OPA bundle (`opa build --bundle`): `.manifest`
// with the revision and `metadata.issued_at`, `policy.wasm`, `data.json`, the Rego sources, and
// `.signatures.json` when POLICY_SIGNING_KEY (a PEM file, or an HS* secret) is set
// (POLICY_SIGNING_ALG, default RS256).
// When the bundle was issued, in its `.manifest` (opa build keeps the metadata of a `.manifest`
// it finds in the sources, and the signature covers the manifest like every file): a service
// refuses a signed bundle older than the one it serves, so an old bundle re-served is not a
// rollback. POLICY_ISSUED_AT (RFC 3339) pins it, for a rebuild that must keep its place.
const issuedAt = bundleIssuedAt(process.env.POLICY_ISSUED_AT);
const work = mkdtempSync(path.join(tmpdir(), 'policy-build-'));
try {
  const sources = path.join(work, 'bundle');
  cpSync(policiesDir, sources, {
    recursive: true,
    filter: (file) => !file.endsWith('_test.rego') && !file.startsWith(path.join(policiesDir, 'schemas')),
  });
  writeFileSync(
    path.join(sources, 'org_settings.rego'),
    `# Generated by scripts/build-policy.mjs from the METADATA of policies/org and ORG_POLICY_MODES.\n` +
      `package org_settings\n\nmodes := ${JSON.stringify(modes)}\n\nrules := ${JSON.stringify(rules)}\n`,
  );
  const revision = process.env.POLICY_REVISION || sourceDigest(sources);
  // Written after the revision is computed: the same Rego keeps the same revision.
  const manifestFile = path.join(sources, '.manifest');
  const manifest = existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')) : {};
  writeFileSync(manifestFile, JSON.stringify({ ...manifest, metadata: { ...manifest.metadata, issued_at: issuedAt } }));
  // A key file given relative to where the build was started, not to the sources opa runs in.
  const signingKey = process.env.POLICY_SIGNING_KEY;
  const keyArgument = signingKey && !signingKey.includes('-----BEGIN') && existsSync(signingKey) ? path.resolve(signingKey) : signingKey;
  const signing = keyArgument ? ['--signing-key', keyArgument, '--signing-alg', process.env.POLICY_SIGNING_ALG || 'RS256'] : [];
  const bundle = path.join(work, 'bundle.tar.gz');
  execFileSync(
    opa,
    [
      'build',
      '--bundle',
      '--target',
      'wasm',
      '--capabilities',
      path.join(root, 'tools/opa/capabilities.json'),
      '--revision',
      revision,
      ...signing,
      '--output',
      bundle,
      ...[...wanted, ...maskEntrypoint].flatMap((e) => ['--entrypoint', e]),
      '.',
    ],
    // From inside the sources: the bundle's files are named `/grants/create.rego`, not by this
    // run's temporary directory, so two builds of the same Rego hold the same files.
    { stdio: 'inherit', cwd: sources },
  );
  // POLICY_VERIFY_KEY: the public key file the service will verify with. The bundle is checked
  // with it, by the service's own code, before it is published: a key pair that does not match
  // fails the build (the Docker image's), not the start of the service.
  const verifyKey = process.env.POLICY_VERIFY_KEY;
  if (verifyKey) {
    const { untar } = require(path.join(root, 'dist/src/policy/bundles/read.js'));
    const { pemBlocks, verifyBundle } = require(path.join(root, 'dist/src/policy/bundles/verify.js'));
    const publicKeys = pemBlocks(readFileSync(verifyKey, 'utf8'));
    if (publicKeys.length === 0) throw new Error(`POLICY_VERIFY_KEY: ${verifyKey} holds no PEM public key`);
    try {
      verifyBundle(await untar(readFileSync(bundle)), { publicKeys });
    } catch (error) {
      console.error(`the bundle does not verify with POLICY_VERIFY_KEY ${verifyKey}: ${error.message}; nothing published`);
      rmSync(work, { recursive: true, force: true });
      process.exit(1);
    }
  }
  execFileSync('tar', ['-xzf', bundle, '-C', work, '/policy.wasm'], { stdio: 'ignore' });
  const out = path.resolve(process.env.POLICY_BUILD_OUT ?? path.join(root, 'build/policy/policy.wasm'));
  const bundleOut = path.resolve(process.env.POLICY_BUNDLE_OUT ?? path.join(path.dirname(out), 'bundle.tar.gz'));
  publish(path.join(work, 'policy.wasm'), out);
  publish(bundle, bundleOut);
  console.log(`${path.relative(root, out)}: ${wanted.length} entrypoints: ${wanted.join(', ')}`);
  const signed = signing.length > 0 ? `signed (${process.env.POLICY_SIGNING_ALG || 'RS256'})` : 'unsigned';
  console.log(
    `${path.relative(root, bundleOut)}: revision ${revision}, issued ${issuedAt}, ${signed}${verifyKey ? `, verified with ${verifyKey}` : ''}`,
  );
  const listed = ORG_DECISIONS.flatMap((d) => Object.entries(modes[d]).map(([name, mode]) => `${d}.${name}=${mode}`));
  console.log(`org packages: ${listed.length > 0 ? listed.join(', ') : 'none'}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** Atomic: a running service never reads half a file. */
function publish(file, out) {
  mkdirSync(path.dirname(out), { recursive: true });
  const staged = path.join(path.dirname(out), `.${path.basename(out)}.${process.pid}`);
  copyFileSync(file, staged);
  // opa writes its output owner-only; a service running as another user must still read it.
  chmodSync(staged, 0o644);
  renameSync(staged, out);
}

/** Now, or POLICY_ISSUED_AT as the service reads it (src/policy/bundles/order.ts), in UTC. */
function bundleIssuedAt(pinned) {
  if (!pinned) return new Date().toISOString();
  const { parseIssuedAt } = require(path.join(root, 'dist/src/policy/bundles/order.js'));
  const ms = parseIssuedAt(pinned);
  if (ms === undefined) {
    console.error(`POLICY_ISSUED_AT ${JSON.stringify(pinned)} is not an RFC 3339 time (2025-01-31T12:00:00Z)`);
    process.exit(1);
  }
  return new Date(ms).toISOString();
}

/** A revision from the sources themselves: the same Rego, the same revision. */
function sourceDigest(dir) {
  const hash = createHash('sha256');
  const walk = (d) =>
    readdirSync(d, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .forEach((entry) => {
        const file = path.join(d, entry.name);
        if (entry.isDirectory()) return walk(file);
        hash.update(path.relative(dir, file)).update('\0').update(readFileSync(file)).update('\0');
      });
  walk(dir);
  return `sha256-${hash.digest('hex').slice(0, 16)}`;
}
