// Writes tools/opa/capabilities.json: the builtins of the pinned opa that its WASM target
// implements natively. Anything else (time.now_ns, crypto.*, io.jwt.*, http.send …) would compile
// but fail at evaluation time in @open-policy-agent/opa-wasm, so the build refuses it up front.
// Run after bumping tools/opa/go.mod: `node scripts/gen-capabilities.mjs`.
//
// opa has no "capabilities of the wasm target" output, so this asks the compiler itself: it
// compiles one probe policy that calls every builtin of `opa capabilities --current`, and reads
// the module's `builtins()` export, which lists the builtins the module expects its host to
// provide. Every builtin the probe calls that is not in that list runs inside the module.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const opa = path.join(root, '.tools/bin/opa');
const current = JSON.parse(execFileSync(opa, ['capabilities', '--current'], { encoding: 'utf8', maxBuffer: 64 << 20 }));

// Unification is compiled to plain instructions, never to a call.
const alwaysNative = new Set(['eq', 'assign']);
// Builtins the planner emits for syntax rather than for a call by name.
const bySyntax = {
  'internal.member_2': 'input.a0 in input.a1',
  'internal.member_3': 'input.a0, input.a1 in input.a2',
  'internal.template_string': '$"{input.a0}"',
};
// Deprecated builtins are not available to v1 policies; variadic ones (print) are not callable here.
const probes = current.builtins
  .filter((b) => b.decl?.type === 'function' && !b.deprecated && !b.decl.variadic)
  .filter((b) => !alwaysNative.has(b.name) && !b.name.startsWith('internal.'))
  .map((b) => ({ name: b.name, expr: `${b.name}(${(b.decl.args ?? []).map((_, i) => `input.a${i}`).join(', ')})` }))
  .concat(Object.entries(bySyntax).map(([name, expr]) => ({ name, expr })));

const work = mkdtempSync(path.join(tmpdir(), 'opa-capabilities-'));
try {
  const rules = probes.map((p, i) => `p${i} := ${p.expr}`).join('\n');
  const all = probes.map((_, i) => `p${i}`).join(', ');
  writeFileSync(path.join(work, 'probe.rego'), `package probe\n\n${rules}\n\nall_calls := [${all}]\n`);
  execFileSync(opa, ['build', '-t', 'wasm', '-e', 'probe/all_calls', '-o', 'probe.tar.gz', 'probe.rego'], { cwd: work });
  execFileSync('tar', ['xzf', 'probe.tar.gz', '/policy.wasm'], { cwd: work, stdio: 'ignore' });
  const hostBuiltins = await hostBuiltinsOf(readFileSync(path.join(work, 'policy.wasm')));
  const native = new Set([...alwaysNative, ...probes.map((p) => p.name).filter((name) => !hostBuiltins.has(name))]);
  current.builtins = current.builtins.filter((b) => native.has(b.name));
  writeFileSync(path.join(root, 'tools/opa/capabilities.json'), JSON.stringify(current, null, 2) + '\n');
  console.log(
    `tools/opa/capabilities.json: ${current.builtins.length} WASM-native builtins; ${hostBuiltins.size} of ${probes.length} probed need the host`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** The names in the module's `builtins()` export (OPA's WASM ABI): what it imports from its host. */
async function hostBuiltinsOf(wasm) {
  const memory = new WebAssembly.Memory({ initial: 5 });
  const unused = () => {
    throw new Error('the probe is never evaluated');
  };
  const env = { memory, opa_abort: unused, opa_println: unused };
  for (let arity = 0; arity <= 4; arity++) env[`opa_builtin${arity}`] = unused;
  const { instance } = await WebAssembly.instantiate(wasm, { env });
  const { builtins, opa_json_dump: dump } = instance.exports;
  const bytes = new Uint8Array(memory.buffer, dump(builtins()));
  return new Set(Object.keys(JSON.parse(new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0))))));
}
