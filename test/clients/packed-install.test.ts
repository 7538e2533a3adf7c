import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brokerWorld, type BrokerWorld } from '../support/broker-world';
import { startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';

/**
 * The SDK and grantctl as a user gets them: each packed (`npm pack`, from its own build), both
 * installed from the tarballs into an empty folder outside the repository, and run there against
 * the real service. Only what the packages declare reaches that folder, so a runtime need of a
 * devDependency, of the repository root or of a source file would fail here. Needs `npm run build`
 * first (it builds both packages); the registry's packages come from npm's cache when it has them.
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
    ['pack', '--ignore-scripts', '--json', '--pack-destination', tarballs, '-w', 'clients/typescript', '-w', 'clients/grantctl'],
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
  expect(packed.map((p) => p.name).sort()).toEqual(['@grant-broker/client', 'grantctl']);
  const sdk = filesOf('@grant-broker/client');
  expect(sdk).toEqual(
    expect.arrayContaining(['package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts', 'dist/transport.js']),
  );
  expect(sdk.filter((file) => file !== 'package.json' && !file.startsWith('dist/'))).toEqual([]);
  const cli = filesOf('grantctl');
  expect(cli).toEqual(expect.arrayContaining(['package.json', 'bin/grantctl.js', 'dist/main.js', 'dist/grants.js']));
  expect(cli.filter((file) => file !== 'package.json' && !file.startsWith('dist/') && !file.startsWith('bin/'))).toEqual([]);
});

it('installs only what the packages declare: none of the service, none of the tooling', () => {
  const installed = readdirSync(path.join(consumer, 'node_modules')).flatMap((entry) =>
    entry.startsWith('@') ? readdirSync(path.join(consumer, 'node_modules', entry)).map((name) => `${entry}/${name}`) : [entry],
  );
  expect(installed).toEqual(expect.arrayContaining(['@grant-broker/client', 'grantctl', 'commander', 'openapi-fetch']));
  for (const absent of ['koa', 'pg', 'ioredis', 'zod', 'typescript', 'jest', 'grant-broker']) expect(installed).not.toContain(absent);
});

it('npx grantctl --help, and real commands against the service: show, attenuate, a named refusal', async () => {
  const help = await run('npx', ['--no-install', 'grantctl', '--help'], consumer);
  expect(help).toMatchObject({ code: 0 });
  for (const command of ['grants', 'calls', 'approvals', 'agents', 'pods', 'connections', 'policy'])
    expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));

  const env = { GRANT_BROKER_URL: service.baseUrl, GRANT_BROKER_TOKEN: world.owner.token, GRANT_BROKER_AGENT_TOKEN: world.agent.token };
  const grant = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, { budget: { calls: 9 } });
  const shown = await run('npx', ['--no-install', 'grantctl', 'grants', 'show', grant.id, '--json'], consumer, env);
  expect(shown).toMatchObject({ code: 0 });
  expect(JSON.parse(shown.stdout)).toEqual((await service.http.get(`/api/grants/${grant.id}`).set(world.owner.auth).expect(200)).body);

  const child = await run('npx', ['--no-install', 'grantctl', 'grants', 'attenuate', grant.id, '--calls', '3', '--json'], consumer, env);
  expect(child).toMatchObject({ code: 0 });
  expect(JSON.parse(child.stdout)).toMatchObject({ parentId: grant.id, budget: { calls: 3 } });

  const wider = await run('npx', ['--no-install', 'grantctl', 'grants', 'attenuate', grant.id, '--calls', '99'], consumer, env);
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
