import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ignore from 'ignore';

/**
 * The Docker build context (issue 25): .dockerignore keeps out what would only make it large or
 * leak (every node_modules, the tools/node runtime, bench and demo scratch, build outputs, keys)
 * and keeps in everything the Dockerfile COPYs. Docker is not run here; the two files are read.
 */
const root = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/**
 * .dockerignore read with the `ignore` package (gitignore's rules). Docker matches every pattern
 * from the context root, where gitignore lets a pattern without a slash match at any depth; so each
 * pattern is anchored with a leading `/` first, and a bare `node_modules` means the top-level one
 * only, as it does for Docker.
 */
function dockerExcludes(): (file: string) => boolean {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => (line.startsWith('!') ? `!/${line.slice(1).replace(/^\/+/, '')}` : `/${line.replace(/^\/+/, '')}`));
  const matcher = ignore().add(patterns);
  return (file) => matcher.ignores(file);
}

/** The context paths the Dockerfile's COPY lines read (those with --from= read another stage). */
function copiedFromContext(): string[] {
  return read('Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => /^COPY\s/i.test(line.trim()))
    .map((line) => line.trim().split(/\s+/).slice(1))
    .filter((words) => !words.some((word) => word.startsWith('--from=')))
    .flatMap((words) => words.filter((word) => !word.startsWith('--')).slice(0, -1));
}

/**
 * A COPY source's files: itself, or every file below it but the node_modules `npm ci` installs and
 * the packages' dist the image's build writes. A source this checkout lacks (policy-keys/ is made
 * per deployment) is checked by its path alone.
 */
function filesOf(source: string): string[] {
  const full = path.join(root, source);
  if (!existsSync(full) || !statSync(full).isDirectory()) return [source];
  return readdirSync(path.join(root, source), { recursive: true, encoding: 'utf8' })
    .map((entry) => path.posix.join(source, entry.split(path.sep).join('/')))
    .filter((file) => !/(^|\/)(node_modules|clients\/[^/]+\/dist|gateway\/dist)\//.test(file) && statSync(path.join(root, file)).isFile());
}

const excluded = dockerExcludes();

it.each([
  'node_modules/koa/package.json',
  'tools/node/node_modules/node/bin/node',
  'clients/typescript/node_modules/x',
  'clients/grantctl/node_modules/x',
  'examples/mcp-broker/node_modules/ajv/package.json',
  'demo.json',
  '.bench-disk-a1B2c3/sync',
  'bench.log',
  'dist/src/main.js',
  'clients/typescript/dist/index.js',
  'clients/grantctl/dist/main.js',
  'gateway/dist/main.js',
  'build/policy/bundle.tar.gz',
  '.tools/bin/opa',
  'coverage/lcov.info',
  '.env',
  '.env.local',
  '.git/config',
  'policy-keys/signing-key.pem',
])('keeps %s out of the build context', (file) => {
  expect(excluded(file)).toBe(true);
});

it('keeps in every file the Dockerfile COPYs from the context', () => {
  const sources = copiedFromContext();
  // The parse found the COPY lines: a Dockerfile it misread would otherwise check nothing.
  expect(sources).toEqual(
    expect.arrayContaining([
      'package-lock.json',
      'src',
      'clients',
      'tools/opa/go.mod',
      'policy-keys/signing-key.pub.pem',
      'clients/grantctl/bin',
    ]),
  );
  const files = sources.flatMap(filesOf);
  expect(files).toEqual(
    expect.arrayContaining(['src/main.ts', 'examples/mcp-broker/main.ts', 'gateway/src/main.ts', 'tools/opa/capabilities.json']),
  );
  expect(sources.filter(excluded)).toEqual([]);
  expect(files.filter(excluded)).toEqual([]);
});
