// The layering of the code, checked by `npm run lint` (dependency-cruiser reads the imports,
// type-only ones included):
//   - in each tree (src/, gateway/, clients/, console/) no circle of files and no circle of folders;
//   - src/kernel imports nothing of src/ outside itself;
//   - floors (HTTP_FLOOR and SERVICES below): the HTTP floor (the framework, the speed-ups, the
//     surfaces over several domains, the wiring) over the domains, over the services, over the
//     kernel; nothing imports a floor above its own; a domain imports another domain only in its
//     `deps.ts`, and only types (the ports it declares, which composition fills), and a domain
//     whose ports name another domain's types names only domains that name none: the domains
//     stand on two floors at most;
//   - the README's "Who imports whom" block names exactly the folder imports the code has;
//   - SQL only in repositories: outside `repository.ts`, `repositories/*.ts` and `src/db/`, no file
//     (read with the TypeScript parser, so comments never count) calls a knex raw method (`.raw(`,
//     `.whereRaw(`, …), passes a table's name (one of the tables migrations/ creates, alone or with
//     `as alias`) as a call's string argument (`db('grants')`, `.from('events')`, `.join(…)`), or
//     holds a string or template that starts like a SQL statement (select, insert into, update … set,
//     delete from, with, listen, notify);
//   - a repository is its own folder's: no file of folder X imports src/Y/repository.ts or
//     src/Y/repositories/* (X ≠ Y), type-only imports included. The wiring (src/*.ts, src/admin/)
//     may: it fills the ports of the lower layers from repositories.
// `--graph` prints the folder graph (what the README's architecture section draws).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
/** The trees beside src/ that hold no domain but must hold no circle either: where each one's folders start. */
const OTHER_TREES = ['gateway/src', 'clients', 'console/src'];
/** What is read of them: their sources, not what a build left beside them. */
const OTHER_SOURCES = ['gateway/src', 'clients/typescript/src', 'clients/grantctl/src', 'console/src'];
const cruise = JSON.parse(
  execFileSync(
    path.join(root, 'node_modules/.bin/depcruise'),
    ['src', ...OTHER_SOURCES, '--output-type', 'json', '--ts-config', 'tsconfig.json', '--no-config', '--ts-pre-compilation-deps'],
    {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    },
  ),
);

/**
 * Each tree's files and the imports among them, and its folders (the first level under the tree;
 * a file at the tree's top stands for itself, as an entry file and the module it builds on are
 * not one layer).
 */
function treeGraph(prefix) {
  const inTree = (file) => file.startsWith(`${prefix}/`);
  const files = cruise.modules.filter((m) => inTree(m.source));
  const folder = (file) => {
    const parts = file.slice(prefix.length + 1).split('/');
    return parts.length > 1 ? `${parts[0]}/` : parts[0];
  };
  const edges = new Map(files.map((m) => [m.source, m.dependencies.map((d) => d.resolved).filter(inTree)]));
  const folders = new Map();
  for (const [from, tos] of edges)
    for (const to of tos) {
      if (folder(from) === folder(to)) continue;
      if (!folders.has(folder(from))) folders.set(folder(from), new Set());
      folders.get(folder(from)).add(folder(to));
    }
  return { files, edges, folders };
}

const modules = cruise.modules.filter((m) => m.source.startsWith('src/'));
const folderOf = (file) => (file.split('/').length > 2 ? file.split('/')[1] : '(top)');
const fileEdges = new Map(modules.map((m) => [m.source, m.dependencies.map((d) => d.resolved).filter((d) => d.startsWith('src/'))]));
const folderEdges = new Map();
for (const [from, tos] of fileEdges) {
  for (const to of tos) {
    if (folderOf(from) === folderOf(to)) continue;
    if (!folderEdges.has(folderOf(from))) folderEdges.set(folderOf(from), new Set());
    folderEdges.get(folderOf(from)).add(folderOf(to));
  }
}

/** Strongly connected components of more than one node: the circles (Tarjan). */
function circles(graph) {
  let index = 0;
  const stack = [];
  const onStack = new Set();
  const indexOf = new Map();
  const low = new Map();
  const found = [];
  const visit = (node) => {
    indexOf.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indexOf.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), indexOf.get(next)));
    }
    if (low.get(node) === indexOf.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component);
    }
  };
  for (const node of graph.keys()) if (!indexOf.has(node)) visit(node);
  return found;
}

const problems = [];
for (const circle of circles(new Map([...fileEdges].map(([k, v]) => [k, new Set(v)]))))
  problems.push(`circle of files: ${circle.join(' -> ')}`);
for (const circle of circles(folderEdges)) problems.push(`circle of folders: ${circle.join(' -> ')}`);
const otherTrees = OTHER_TREES.map((prefix) => ({ prefix, ...treeGraph(prefix) }));
for (const { prefix, edges, folders } of otherTrees) {
  for (const circle of circles(new Map([...edges].map(([k, v]) => [k, new Set(v)]))))
    problems.push(`circle of files: ${circle.join(' -> ')}`);
  for (const circle of circles(folders)) problems.push(`circle of folders in ${prefix}/: ${circle.join(' -> ')}`);
}
for (const [from, tos] of fileEdges) {
  for (const to of tos) {
    if (folderOf(from) === 'kernel' && folderOf(to) !== 'kernel') problems.push(`the kernel imports upward: ${from} -> ${to}`);
  }
}

/**
 * The floors of src/, top down. A folder not named here is a domain's. Surfaces that own no table
 * and speak for several domains sit on the HTTP floor with the framework: the installed agent's
 * runtime (its pods, seat, grants and events), the protocol adapters over the broker check, OAuth.
 */
const HTTP_FLOOR = new Set(['(top)', 'admin', 'http', 'speedups', 'runtime', 'protocols', 'oauth']);
const SERVICES = new Set(['budget', 'cache', 'credentials', 'db', 'events', 'github-apps', 'outbound', 'policy', 'redis']);
const floorOf = (folder) =>
  HTTP_FLOOR.has(folder) ? 'http' : folder === 'kernel' ? 'kernel' : SERVICES.has(folder) ? 'service' : 'domain';
const RANK = { kernel: 0, service: 1, domain: 2, http: 3 };
const typeOnly = new Map(
  modules.flatMap((m) =>
    m.dependencies.filter((d) => d.dependencyTypes.includes('type-only')).map((d) => [`${m.source} ${d.resolved}`, true]),
  ),
);
const portEdges = new Map();
for (const [from, tos] of fileEdges) {
  for (const to of tos) {
    const [a, b] = [folderOf(from), folderOf(to)];
    if (a === b) continue;
    if (RANK[floorOf(b)] > RANK[floorOf(a)]) problems.push(`an import up a floor (${floorOf(a)} -> ${floorOf(b)}): ${from} -> ${to}`);
    if (floorOf(a) !== 'domain' || floorOf(b) !== 'domain') continue;
    if (from !== `src/${a}/deps.ts` || !typeOnly.has(`${from} ${to}`))
      problems.push(`a domain imports another outside its ports (src/${a}/deps.ts, types only): ${from} -> ${to}`);
    else {
      if (!portEdges.has(a)) portEdges.set(a, new Set());
      portEdges.get(a).add(b);
    }
  }
}
for (const [a, bs] of portEdges)
  for (const b of bs)
    if (portEdges.has(b))
      problems.push(`a third floor of domains: ${a}'s ports name ${b}, whose ports name ${[...portEdges.get(b)].join(', ')}`);

/** Whether a file may hold SQL: a repository, or the database's own folder. */
const mayHoldSql = (file) => /(^|\/)repository\.ts$/.test(file) || /\/repositories\/[^/]+\.ts$/.test(file) || file.startsWith('src/db/');
const isRepository = (file) => /^src\/[^/]+\/(repository\.ts|repositories\/)/.test(file);
const WIRING = new Set(['(top)', 'admin']);

/** The tables the migrations create. */
function tableNames() {
  const tables = new Set();
  const dir = path.join(root, 'migrations');
  for (const name of readdirSync(dir)) {
    for (const match of readFileSync(path.join(dir, name), 'utf8').matchAll(/createTable(?:IfNotExists)?\(\s*['"`]([a-z_]+)['"`]/g))
      tables.add(match[1]);
  }
  return tables;
}

const RAW_METHODS = new Set([
  'raw',
  'whereRaw',
  'orWhereRaw',
  'andWhereRaw',
  'havingRaw',
  'joinRaw',
  'orderByRaw',
  'groupByRaw',
  'fromRaw',
]);
const SQL_STATEMENT =
  /^\s*(select\s|insert\s+into\s|update\s+["\w.]+\s+set\s|delete\s+from\s|with\s+(recursive\s+)?\w+\s+as\s*\(|listen\s|notify\s|lock\s+table\s)/i;

/** Why a file holds SQL, one line per finding (empty: it holds none). */
function sqlFindings(file, tables) {
  const text = readFileSync(path.join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const findings = [];
  const at = (node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
  const tableName = new RegExp(`^(${[...tables].join('|')})(\\s+as\\s+\\w+)?$`);
  const visit = (node) => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && RAW_METHODS.has(node.expression.name.text)) {
      findings.push(`${at(node)} calls .${node.expression.name.text}()`);
    }
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      if (ts.isCallExpression(node.parent) && node.parent.arguments.includes(node) && tableName.test(node.text)) {
        findings.push(`${at(node)} names the table '${node.text}'`);
      }
      if (SQL_STATEMENT.test(node.text)) findings.push(`${at(node)} holds SQL: ${node.text.trim().split('\n')[0].slice(0, 60)}`);
    }
    if (ts.isTemplateExpression(node)) {
      const literal = [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join('${…}');
      if (SQL_STATEMENT.test(literal)) findings.push(`${at(node)} holds SQL: ${literal.trim().split('\n')[0].slice(0, 60)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}

const tables = tableNames();
for (const { source: file } of modules) {
  if (!file.endsWith('.ts') || mayHoldSql(file)) continue;
  problems.push(...sqlFindings(file, tables).map((finding) => `SQL outside a repository: ${finding}`));
}

for (const [from, tos] of fileEdges) {
  if (WIRING.has(folderOf(from))) continue;
  for (const to of tos)
    if (isRepository(to) && folderOf(to) !== folderOf(from)) problems.push(`another folder's repository: ${from} -> ${to}`);
}

/**
 * The README's folder graph: lines of `from → to, to` (several per line, two spaces apart), the
 * kernel left out because every folder uses it.
 */
function readmeGraph() {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const block = readme.split('Who imports whom')[1]?.split('```')[1];
  if (!block) return null;
  const graph = new Map();
  for (const match of block.matchAll(/(\(top\)|[a-z][a-z-]*)\s*→\s*(.+?)(?=\s{2,}(?:\(top\)|[a-z][a-z-]*)\s*→|\n|$)/g)) {
    graph.set(match[1], new Set(match[2].split(',').map((name) => name.trim())));
  }
  return graph;
}

const drawn = readmeGraph();
if (!drawn) problems.push("README.md has no 'Who imports whom' block");
else {
  for (const [from, tos] of folderEdges) {
    if (from === '(top)' || from === 'kernel') continue;
    const actual = [...tos].filter((to) => to !== 'kernel').sort();
    const said = [...(drawn.get(from) ?? [])].filter((to) => to !== 'kernel').sort();
    if (actual.join() !== said.join())
      problems.push(`README's graph says ${from} → ${said.join(', ') || 'nothing'}; the code: ${actual.join(', ') || 'nothing'}`);
  }
  for (const from of drawn.keys()) if (!folderEdges.has(from)) problems.push(`README's graph names ${from}, which imports nothing`);
}

if (process.argv.includes('--graph')) {
  for (const [from, tos] of [...folderEdges].sort()) console.log(`${from} -> ${[...tos].sort().join(', ')}`);
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(
  `architecture: ${modules.length} files in ${new Set(modules.map((m) => folderOf(m.source))).size} folders of src/, layers hold; ` +
    `no circle in src/, ${otherTrees.map(({ prefix, files }) => `${prefix}/ (${files.length} files)`).join(', ')}`,
);
