import { execFile } from 'node:child_process';
import path from 'node:path';
import ts from 'typescript';

/**
 * The SDK as a workspace package (`@grant-broker/client`): once `npm run build` has built it to its
 * own dist, plain JavaScript in the repository requires it by name, and TypeScript finds its built
 * declarations by name under every module resolution a consumer may use. (The packed package,
 * installed in an empty folder: packed-install.test.ts.)
 */
const root = path.resolve(__dirname, '../..');

function node(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { cwd: root, timeout: 20_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

it('plain JavaScript requires @grant-broker/client by name (its own build)', async () => {
  const run = await node(`
    const sdk = require('@grant-broker/client');
    const problem = new sdk.ApiProblem(404, 'not_found', 'no such grant', {});
    const client = sdk.createClient({ baseUrl: 'http://127.0.0.1:1', token: 't' });
    console.log(JSON.stringify({
      resolved: require.resolve('@grant-broker/client'),
      createClient: typeof sdk.createClient,
      helpers: ['withCheck', 'waitForApproval', 'events', 'recordOutcome'].filter((name) => typeof client[name] === 'function'),
      problem: [problem instanceof Error, problem.code, problem.credentialRejected],
      retryAfter: sdk.parseRetryAfter('7'),
      version: require('@grant-broker/client/package.json').version,
    }));
  `);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  expect(JSON.parse(run.stdout)).toEqual({
    resolved: expect.stringMatching(/\/clients\/typescript\/dist\/index\.js$/),
    createClient: 'function',
    helpers: ['withCheck', 'waitForApproval', 'events', 'recordOutcome'],
    problem: [true, 'not_found', false],
    retryAfter: 7000,
    version: '0.1.0',
  });
});

it.each([
  ['node10', ts.ModuleResolutionKind.Node10, ts.ModuleKind.CommonJS],
  ['node16', ts.ModuleResolutionKind.Node16, ts.ModuleKind.Node16],
  ['bundler', ts.ModuleResolutionKind.Bundler, ts.ModuleKind.ESNext],
])('TypeScript (moduleResolution %s) finds the built declarations of @grant-broker/client by name', (_name, moduleResolution, module) => {
  const { resolvedModule } = ts.resolveModuleName(
    '@grant-broker/client',
    path.join(root, 'consumer.ts'),
    { moduleResolution, module },
    ts.sys,
  );
  expect(resolvedModule?.resolvedFileName).toMatch(/\/clients\/typescript\/dist\/index\.d\.ts$/);
});
