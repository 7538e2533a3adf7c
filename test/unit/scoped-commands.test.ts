import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The gateway and grantctl ship as `@grant-broker/mcp-gateway` and `@grant-broker/grantctl`. The
 * bare names on the npm registry are not ours (`mcp-gateway` is somebody else's package today), and
 * `npx <name>` fetches whatever the registry holds under it when it is not installed, handing it
 * the broker and agent tokens of the environment. So no document, example, README or program of
 * the repository may tell anyone to run them by a bare name: every `npx` line (shell) and every host
 * config whose command is `npx` (JSON) must name the scoped package.
 */
const root = path.resolve(__dirname, '../..');
const OURS = new Set(['grantctl', 'mcp-gateway']);

/** What `npx` would fetch for these arguments: the `-p`/`--package` values, else its command. */
function npxPackages(args: string[]): string[] {
  const packages: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '-p' || arg === '--package') packages.push(args[++i] ?? '');
    else if (arg.startsWith('--package=')) packages.push(arg.slice('--package='.length));
    else if (arg === '--') continue;
    else if (arg.startsWith('-')) continue;
    else return packages.length > 0 ? packages : [arg];
  }
  return packages;
}

/** A package spec that resolves to a bare name of ours (`grantctl`, `mcp-gateway@1`, …). */
const unscoped = (spec: string) => OURS.has(spec.replace(/@[^/]*$/, ''));

/** Each `npx …` of a shell line, up to the end of its command (`&&`, `|`, `;`, `)`, a backtick or a quote). */
function shellCommands(text: string): string[][] {
  return [...text.matchAll(/\bnpx((?:[ \t]+[^\s&|;)`'"]+)+)/g)].map((match) => match[1]!.trim().split(/[ \t]+/));
}

/** The `args` of each JSON host config whose `command` is `npx`. */
function hostConfigs(text: string): string[][] {
  return [...text.matchAll(/"command"\s*:\s*"npx"\s*,\s*"args"\s*:\s*(\[[^\]]*\])/g)].map((match) => JSON.parse(match[1]!) as string[]);
}

function offences(text: string): string[] {
  return [...shellCommands(text), ...hostConfigs(text)]
    .filter((args) => npxPackages(args).some(unscoped))
    .map((args) => `npx ${args.join(' ')}`);
}

it('recognizes what npx would fetch', () => {
  expect(offences('run `npx mcp-gateway --config gateway.json` now')).toEqual(['npx mcp-gateway --config gateway.json']);
  expect(offences('npx -y grantctl grants list && npx --yes mcp-gateway@0.1.0')).toEqual([
    'npx -y grantctl grants list',
    'npx --yes mcp-gateway@0.1.0',
  ]);
  expect(offences('{"command": "npx", "args": ["mcp-gateway", "--config", "gateway.json"]}')).toEqual([
    'npx mcp-gateway --config gateway.json',
  ]);
  expect(offences('npx -p mcp-gateway mcp-gateway')).toEqual(['npx -p mcp-gateway mcp-gateway']);
  for (const fine of [
    'npx -y @grant-broker/mcp-gateway --config gateway.json',
    'npx -p @grant-broker/mcp-gateway mcp-gateway --config gateway.json',
    'npx --package=@grant-broker/grantctl grantctl grants list',
    'npx @grant-broker/grantctl approvals list',
    '{"command": "npx", "args": ["-y", "@grant-broker/mcp-gateway", "--config", "gateway.json"]}',
    'npx @modelcontextprotocol/server-everything stdio',
  ])
    expect(offences(fine)).toEqual([]);
});

it('no document, example or program of the repository runs grantctl or the gateway by a bare name', () => {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file && !file.startsWith('test/') && !/(^|\/)package-lock\.json$/.test(file))
    .filter((file) => /\.(md|json|ts|tsx|mjs|cjs|js|sh|ya?ml)$/.test(file) || /(^|\/)(Dockerfile|README)$/.test(file));
  // The files a new user reads first are among them: a listing that missed them would check nothing.
  expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/gateway.md', 'docs/clients.md', 'examples/mcp-broker/README.md']));
  const found = files.flatMap((file) => {
    let text: string;
    try {
      text = readFileSync(path.join(root, file), 'utf8');
    } catch {
      return [];
    }
    return offences(text).map((offence) => `${file}: ${offence}`);
  });
  expect(found).toEqual([]);
});

it('the packages are named in our scope, and install the commands under their short names', () => {
  const manifest = (folder: string) =>
    JSON.parse(readFileSync(path.join(root, folder, 'package.json'), 'utf8')) as { name: string; bin: object };
  expect(manifest('gateway')).toMatchObject({ name: '@grant-broker/mcp-gateway', bin: { 'mcp-gateway': 'bin/mcp-gateway.js' } });
  expect(manifest('clients/grantctl')).toMatchObject({ name: '@grant-broker/grantctl', bin: { grantctl: 'bin/grantctl.js' } });
});
