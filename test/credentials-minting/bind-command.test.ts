import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expectProblem } from '../support/problems';
import { APP_TOOLS, credentialWorld, type CredentialWorld } from './world';
import { human } from '../support/world';

/**
 * `npm run admin -- github-app bind`, the built CLI against this run's database: the operator
 * binds an installation to the one user who may connect it, and never moves it to another.
 */
const run = promisify(execFile);
const cli = path.resolve(__dirname, '../../dist/src/admin/cli.js');
let world: CredentialWorld;
let appEnv: Record<string, string>;

beforeAll(async () => {
  world = await credentialWorld();
  appEnv = {
    GITHUB_APPS: JSON.stringify({ acme: { appId: world.github.appId, privateKeyEnv: 'ACME_APP_KEY', apiUrl: world.github.url } }),
    ACME_APP_KEY: world.github.privateKeyPem,
  };
});
afterAll(() => world.close());

async function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...process.env, ...appEnv }, timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function connect(who: { auth: { Authorization: string } }, externalInstallationId: string) {
  return world.service.http
    .post('/api/connections')
    .set(who.auth)
    .send({ kind: 'code_hosting_app', brokerId: world.broker.id, externalInstallationId, app: 'acme', tools: APP_TOOLS });
}

describe('npm run admin -- github-app bind', () => {
  it('binds an installation to its owner, who may then connect it; nobody else may', async () => {
    const bob = human(world.service, 'bob');
    const mallory = human(world.service, 'mallory');
    expectProblem(await connect(bob, world.installations.otherOrg), 422, 'installation_not_bound');
    const bound = await admin([
      'github-app',
      'bind',
      '--app',
      'acme',
      '--installation',
      world.installations.otherOrg,
      '--owner',
      bob.userId,
    ]);
    expect(bound.code).toBe(0);
    expect(JSON.parse(bound.stdout)).toEqual({ app: 'acme', externalInstallationId: world.installations.otherOrg, ownerId: bob.userId });
    expect((await connect(bob, world.installations.otherOrg)).status).toBe(201);
    expectProblem(await connect(mallory, world.installations.otherOrg), 422, 'installation_not_bound');

    // Binding it again to the same owner changes nothing; to another owner is refused.
    expect(
      (await admin(['github-app', 'bind', '--app', 'acme', '--installation', world.installations.otherOrg, '--owner', bob.userId])).code,
    ).toBe(0);
    const moved = await admin([
      'github-app',
      'bind',
      '--app',
      'acme',
      '--installation',
      world.installations.otherOrg,
      '--owner',
      mallory.userId,
    ]);
    expect(moved.code).toBe(1);
    expect(moved.stderr).toMatch(/installation_bound_to_another_owner/);
    expectProblem(await connect(mallory, world.installations.otherOrg), 422, 'installation_not_bound');
    for (const output of [bound, moved]) expect(output.stdout + output.stderr).not.toContain(world.github.privateKeyPem.split('\n')[1]);
  });

  it.each([
    ['an app that is not configured', ['--app', 'nope', '--installation', '77', '--owner', 'u'], 1, /unknown_app/],
    ['an installation id that is not digits', ['--app', 'acme', '--installation', '77/../1', '--owner', 'u'], 2, /in digits/],
    ['a missing owner', ['--app', 'acme', '--installation', '77'], 2, /usage/],
  ])('refuses %s', async (_label, args, code, message) => {
    const result = await admin(['github-app', 'bind', ...args]);
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(message);
  });
});
