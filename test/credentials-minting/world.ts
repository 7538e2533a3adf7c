import { bindInstallation } from '../../src/github-apps/bindings';
import { ManualClock } from '../support/clock';
import { startLocalGitHub, type LocalGitHub } from '../support/github-server';
import { startService, type TestService } from '../support/service';
import { broker, human, podWith, type Human } from '../support/world';

/** The tools of an app connection: what each reads in `args` and the GitHub permissions its token carries. */
export const APP_TOOLS = [
  { name: 'repos.read_file', access: 'read', resource: { repository: '/repository', path: '/path' }, permissions: { contents: 'read' } },
  { name: 'issues.create_comment', access: 'write', resource: { repository: '/repository' }, permissions: { issues: 'write' } },
  { name: 'repos.list', access: 'read' },
];

/**
 * A service configured with one GitHub App (`acme`) whose API is a local GitHub held to GitHub's
 * published contract; `installations.acme` is acme's (bound to alice), `installations.otherOrg`
 * another org's (bound to nobody). Time is the test's.
 */
export async function credentialWorld(env: Record<string, string> = {}) {
  const clock = new ManualClock();
  // GitHub's ids of the two installations: fresh for each world, as the test database is shared by the run.
  const base = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  const ids = { acme: String(base), otherOrg: String(base + 1) };
  const github: LocalGitHub = await startLocalGitHub(
    {
      [ids.acme]: { account: 'acme', repositories: ['api', 'web'], permissions: { contents: 'write', issues: 'write', metadata: 'read' } },
      [ids.otherOrg]: { account: 'other-org', repositories: ['secret'], permissions: { contents: 'write', metadata: 'read' } },
    },
    { now: () => clock.now() },
  );
  const service: TestService = await startService(
    {
      GITHUB_APPS: JSON.stringify({ acme: { appId: github.appId, privateKeyEnv: 'ACME_APP_KEY', apiUrl: github.url } }),
      ACME_APP_KEY: github.privateKeyPem,
      GITHUB_TOKEN_TIMEOUT_MS: '1000',
      GITHUB_RESPONSE_MAX_BYTES: '65536',
      ...env,
    },
    { clock },
  );
  const alice = human(service, 'alice');
  const podId = await podWith(service, alice);
  const brk = await broker(service, 'credential-broker');
  const { db, policy, config } = service.deps;
  await bindInstallation({ db, policy, apps: config.githubApps }, { app: 'acme', externalInstallationId: ids.acme, ownerId: alice.userId });
  return {
    github,
    clock,
    service,
    alice,
    podId,
    broker: brk,
    installations: ids,
    close: () => Promise.all([service.close(), github.close()]),
  };
}

export type CredentialWorld = Awaited<ReturnType<typeof credentialWorld>>;

export async function appConnection(world: CredentialWorld, who: Human, overrides: Record<string, unknown> = {}) {
  return world.service.http
    .post('/api/connections')
    .set(who.auth)
    .send({
      kind: 'code_hosting_app',
      brokerId: world.broker.id,
      externalInstallationId: world.installations.acme,
      app: 'acme',
      tools: APP_TOOLS,
      ...overrides,
    });
}

export async function appGrant(world: CredentialWorld, connectionId: string, options: Record<string, unknown> = {}) {
  const res = await world.service.http
    .post('/api/grants')
    .set(world.alice.auth)
    .send({
      connectionId,
      target: { kind: 'pod', id: world.podId },
      tools: APP_TOOLS.map((tool) => tool.name),
      writeMode: 'write',
      budget: { calls: 100, windowMs: 3_600_000 },
      ...options,
    });
  if (res.status !== 201) throw new Error(`grant creation answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as { id: string };
}

export function checkWithCredential(
  world: CredentialWorld,
  grantId: string,
  args: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return world.service.http
    .post('/api/broker/check')
    .set(world.broker.auth)
    .send({ grantId, tool: 'repos.read_file', subjectToken: world.alice.token, args, credential: true, ...extra });
}
