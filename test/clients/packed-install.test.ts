import { execFile } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { descendants, goneAfter } from '../gateway/support/processes';
import { brokerWorld, type BrokerWorld } from '../support/broker-world';
import { startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';

/**
 * The SDK, grantctl and the MCP gateway as a user gets them: each packed (`npm pack`, from its own
 * build), all installed from the tarballs into an empty folder outside the repository, and run
 * there against the real service, by their scoped names (the bare `grantctl` and `mcp-gateway` on
 * the registry are not ours). Only what the packages declare reaches that folder, so a runtime need
 * of a devDependency, of the repository root or of a source file would fail here. Needs `npm run
 * build` first (it builds the packages); the registry's packages come from npm's cache when it has
 * them.
 */
jest.setTimeout(180_000);

const root = path.resolve(__dirname, '../..');
let service: TestService;
let world: BrokerWorld;
let scratch: string;
let consumer: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A child process with npm's own variables of this run removed: the consumer's npm is a fresh one. */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && !name.startsWith('GRANT_BROKER_')),
  );
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...clean, ...env }, timeout: 150_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

interface Packed {
  name: string;
  filename: string;
  files: Array<{ path: string }>;
}
let packed: Packed[];

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
  scratch = mkdtempSync(path.join(tmpdir(), 'grant-broker-packed-'));
  const tarballs = path.join(scratch, 'tarballs');
  consumer = path.join(scratch, 'consumer');
  for (const dir of [tarballs, consumer]) mkdirSync(dir);

  // From the builds `npm run build` made: packing does not rebuild them under a running test.
  const pack = await run(
    'npm',
    [
      'pack',
      '--ignore-scripts',
      '--json',
      '--pack-destination',
      tarballs,
      '-w',
      'clients/typescript',
      '-w',
      'clients/grantctl',
      '-w',
      'gateway',
    ],
    root,
  );
  expect(pack).toMatchObject({ code: 0 });
  packed = JSON.parse(pack.stdout) as Packed[];

  writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  const install = await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packed.map((p) => path.join(tarballs, p.filename))],
    consumer,
  );
  expect(install).toMatchObject({ code: 0 });
});
afterAll(async () => {
  await service?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const filesOf = (name: string) =>
  packed
    .find((p) => p.name === name)!
    .files.map((f) => f.path)
    .sort();

it('each tarball holds its build and its manifest: no sources, tests or configuration', () => {
  expect(packed.map((p) => p.name).sort()).toEqual(['@grant-broker/client', '@grant-broker/grantctl', '@grant-broker/mcp-gateway']);
  const sdk = filesOf('@grant-broker/client');
  expect(sdk).toEqual(
    expect.arrayContaining(['package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts', 'dist/transport.js']),
  );
  expect(sdk.filter((file) => file !== 'package.json' && !file.startsWith('dist/'))).toEqual([]);
  const cli = filesOf('@grant-broker/grantctl');
  expect(cli).toEqual(expect.arrayContaining(['package.json', 'bin/grantctl.js', 'dist/main.js', 'dist/grants.js']));
  expect(cli.filter((file) => file !== 'package.json' && !file.startsWith('dist/') && !file.startsWith('bin/'))).toEqual([]);
  const gateway = filesOf('@grant-broker/mcp-gateway');
  expect(gateway).toEqual(expect.arrayContaining(['package.json', 'bin/mcp-gateway.js', 'dist/main.js', 'dist/http-listener.js']));
  expect(gateway.filter((file) => file !== 'package.json' && !file.startsWith('dist/') && !file.startsWith('bin/'))).toEqual([]);
});

it('installs only what the packages declare: none of the service, none of the tooling', () => {
  const installed = readdirSync(path.join(consumer, 'node_modules')).flatMap((entry) =>
    entry.startsWith('@') ? readdirSync(path.join(consumer, 'node_modules', entry)).map((name) => `${entry}/${name}`) : [entry],
  );
  expect(installed).toEqual(
    expect.arrayContaining([
      '@grant-broker/client',
      '@grant-broker/grantctl',
      '@grant-broker/mcp-gateway',
      '@modelcontextprotocol/sdk',
      'commander',
      'openapi-fetch',
    ]),
  );
  // Nothing under a bare name of ours, which on the registry is someone else's.
  for (const absent of ['koa', 'pg', 'ioredis', 'typescript', 'jest', 'grant-broker', 'grantctl', 'mcp-gateway'])
    expect(installed).not.toContain(absent);
  // The gateway's own devDependencies (the servers it is tested against) stay out.
  for (const absent of ['@modelcontextprotocol/server-everything', '@modelcontextprotocol/conformance'])
    expect(installed).not.toContain(absent);
});

it('npx @grant-broker/grantctl --help, and real commands against the service: show, attenuate, a named refusal', async () => {
  const help = await run('npx', ['--no-install', '@grant-broker/grantctl', '--help'], consumer);
  expect(help).toMatchObject({ code: 0 });
  for (const command of ['grants', 'calls', 'approvals', 'agents', 'pods', 'connections', 'policy'])
    expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));

  const env = { GRANT_BROKER_URL: service.baseUrl, GRANT_BROKER_TOKEN: world.owner.token, GRANT_BROKER_AGENT_TOKEN: world.agent.token };
  const grant = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, { budget: { calls: 9 } });
  const shown = await run('npx', ['--no-install', '@grant-broker/grantctl', 'grants', 'show', grant.id, '--json'], consumer, env);
  expect(shown).toMatchObject({ code: 0 });
  expect(JSON.parse(shown.stdout)).toEqual((await service.http.get(`/api/grants/${grant.id}`).set(world.owner.auth).expect(200)).body);

  const child = await run(
    'npx',
    ['--no-install', '@grant-broker/grantctl', 'grants', 'attenuate', grant.id, '--calls', '3', '--json'],
    consumer,
    env,
  );
  expect(child).toMatchObject({ code: 0 });
  expect(JSON.parse(child.stdout)).toMatchObject({ parentId: grant.id, budget: { calls: 3 } });

  const wider = await run(
    'npx',
    ['--no-install', '@grant-broker/grantctl', 'grants', 'attenuate', grant.id, '--calls', '99'],
    consumer,
    env,
  );
  expect(wider).toMatchObject({ code: 1, stdout: '' });
  const problem = JSON.parse(wider.stderr.split('\n').find((line) => line.startsWith('{'))!);
  expect(problem).toMatchObject({ code: 'grant_widening', fault: "budget.calls: 99 (the parent's: 9)" });
});

it('the SDK from plain JavaScript (require and import) and from TypeScript, calling the service', async () => {
  const env = { BASE_URL: service.baseUrl, TOKEN: world.owner.token };
  const required = await run(
    process.execPath,
    [
      '-e',
      `const { createClient, ApiProblem } = require('@grant-broker/client');
       const c = createClient({ baseUrl: process.env.BASE_URL, token: process.env.TOKEN });
       c.unwrap(c.api.GET('/api/pods/{podId}', { params: { path: { podId: '${world.podId}' } } }))
         .then((pod) => c.unwrap(c.api.GET('/api/grants/{grantId}', { params: { path: { grantId: 'grt_01jzzzzzzzzzzzzzzzzzzzzzzz' } } }))
           .catch((e) => console.log(JSON.stringify({ pod: pod.id, problem: e instanceof ApiProblem && e.code, at: require.resolve('@grant-broker/client') }))));`,
    ],
    consumer,
    env,
  );
  expect(required).toMatchObject({ code: 0, stderr: '' });
  expect(JSON.parse(required.stdout)).toEqual({
    pod: world.podId,
    problem: 'not_found',
    at: path.join(consumer, 'node_modules/@grant-broker/client/dist/index.js'),
  });

  const imported = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "import { createClient, parseRetryAfter } from '@grant-broker/client'; console.log(typeof createClient, parseRetryAfter('2'));",
    ],
    consumer,
  );
  expect(imported).toMatchObject({ code: 0, stdout: 'function 2000\n' });

  // Its declarations type a consumer's code: a path the API has compiles, one it lacks does not.
  writeFileSync(
    path.join(consumer, 'consumer.ts'),
    `import { createClient, type Grant } from '@grant-broker/client';
const c = createClient({ baseUrl: 'http://127.0.0.1:8080', token: 't' });
export async function show(grantId: string): Promise<Grant['status']> {
  const grant = await c.unwrap(c.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } }));
  return grant.status;
}
// @ts-expect-error: no such path in the API
export const wrong = c.api.GET('/api/no-such-path');
`,
  );
  writeFileSync(
    path.join(consumer, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [] },
      files: ['consumer.ts'],
    }),
  );
  const tsc = await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', consumer], consumer);
  expect(tsc).toMatchObject({ code: 0, stdout: '' });
});

it("npx @grant-broker/mcp-gateway: prints a connection's tools, and serves an agent over stdio against the service", async () => {
  const config = {
    brokerUrl: service.baseUrl,
    brokerTokenEnv: 'GATEWAY_BROKER_TOKEN',
    // The upstream is any MCP server: server-everything from the repository's own install.
    upstream: {
      command: process.execPath,
      args: [path.join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
    },
    tools: { echo: { grantTool: 'repos.read_file', access: 'read' } },
  };
  const configFile = path.join(consumer, 'gateway.json');
  writeFileSync(configFile, JSON.stringify(config));

  const tools = await run('npx', ['--no-install', '@grant-broker/mcp-gateway', 'connection-tools', '--config', configFile], consumer);
  expect(tools).toMatchObject({ code: 0 });
  expect(JSON.parse(tools.stdout)).toEqual([{ name: 'repos.read_file', access: 'read' }]);

  // As a host runs it: npx with the scoped name, from the folder it is installed in.
  const grant = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, { tools: ['repos.read_file'] });
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))) as Record<string, string>;
  const transport = new StdioClientTransport({
    command: 'npx',
    args: ['--no-install', '@grant-broker/mcp-gateway', '--config', configFile],
    cwd: consumer,
    env: { ...clean, GATEWAY_BROKER_TOKEN: world.broker.token, GRANT_ID: grant.id, AGENT_TOKEN: world.agent.token },
    stderr: 'pipe',
  });
  const agent = new Client({ name: 'packed-host', version: '1' });
  await agent.connect(transport);
  try {
    expect((await agent.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
    const echoed = await agent.callTool({ name: 'echo', arguments: { message: 'from the tarball' } });
    expect(echoed).toMatchObject({ content: [{ type: 'text', text: 'Echo: from the tarball' }] });
    // The outcome is reported after the agent has its answer, in the gateway's next batch.
    let calls = await service.http.get(`/api/grants/${grant.id}/calls`).set(world.owner.auth).expect(200);
    for (let tries = 0; tries < 100 && calls.body.items[0]?.outcome === 'pending'; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      calls = await service.http.get(`/api/grants/${grant.id}/calls`).set(world.owner.auth).expect(200);
    }
    expect(calls.body.items).toEqual([expect.objectContaining({ tool: 'repos.read_file', outcome: 'succeeded' })]);
    // The host quits: npx, the gateway and its upstream are gone within a second (the gateway holds the broker token).
    const tree = [transport.pid!, ...descendants(transport.pid!)];
    const closing = Date.now();
    await agent.close();
    expect(await goneAfter(tree, closing)).toBeLessThan(1_000);
  } finally {
    await agent.close();
  }
});
