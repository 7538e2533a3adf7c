// Writes tools/opa/capabilities.json: the builtins of the pinned opa that its WASM target
// implements natively. Anything else (time.now_ns, crypto.*, io.jwt.*, http.send …) would compile
// but fail at evaluation time in @open-policy-agent/opa-wasm, so the build refuses it up front.
// Run after bumping tools/opa/go.mod: `node scripts/gen-capabilities.mjs`.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const opaDir = path.join(root, 'tools/opa');
const modDir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', 'github.com/open-policy-agent/opa'], {
  cwd: opaDir,
  encoding: 'utf8',
}).trim();

const wasmSource = readFileSync(path.join(modDir, 'internal/compiler/wasm/wasm.go'), 'utf8');
const table = wasmSource.slice(wasmSource.indexOf('var builtinsFunctions'));
const goNames = new Set([...table.slice(0, table.indexOf('\n}\n')).matchAll(/ast\.(\w+)\.Name:/g)].map((m) => m[1]));

const builtinSource = readFileSync(path.join(modDir, 'v1/ast/builtins.go'), 'utf8');
const regoNames = new Set();
for (const m of builtinSource.matchAll(/var (\w+) = &Builtin\{\s*Name:\s*"([^"]+)"/g)) {
  if (goNames.has(m[1])) regoNames.add(m[2]);
}
// Operators are planned as builtins too ("eq", "equal", …) and come through the same table.
const opa = path.join(root, '.tools/bin/opa');
const current = JSON.parse(execFileSync(opa, ['capabilities', '--current'], { encoding: 'utf8', maxBuffer: 64 << 20 }));
current.builtins = current.builtins.filter((b) => regoNames.has(b.name) || b.name === 'eq' || b.name === 'assign');
writeFileSync(path.join(root, 'tools/opa/capabilities.json'), JSON.stringify(current, null, 2) + '\n');
console.log(`tools/opa/capabilities.json: ${current.builtins.length} WASM-native builtins of ${goNames.size} listed`);
