import { brokerWorld } from '../support/broker-world';
import { grantctl as runGrantctl, type GrantctlRun } from '../support/grantctl';
import { startedServiceWith } from '../support/service';
import { installAgent, rootGrant } from '../support/world';

/**
 * `grantctl grants attenuate` as an installed agent runs it (its runtime token in
 * GRANT_BROKER_AGENT_TOKEN), and `--repositories`, `--refs`, `--paths` on create and attenuate,
 * against the real service. A refusal names the field and the tool at fault beside the parent's
 * value, and nothing is created.
 */
const { service, world } = startedServiceWith(brokerWorld);

const grantctl = (args: string[], agentToken: string = world.agent.token) =>
  runGrantctl(args, { url: service.baseUrl, token: world.owner.token, agentToken });
const json = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
};
const refused = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 1, stdout: '' });
  return JSON.parse(run.stderr);
};
const podGrant = (limits: Record<string, unknown>) =>
  rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId }, limits);
async function childrenOf(rootId: string): Promise<string[]> {
  const listed = await service.http.get(`/api/pods/${world.podId}/grants`).query({ limit: 200 }).set(world.owner.auth).expect(200);
  return listed.body.items
    .filter((g: { rootId: string; id: string }) => g.rootId === rootId && g.id !== rootId)
    .map((g: { id: string }) => g.id);
}

it('create takes --repositories, --refs and --paths; attenuate narrows each, inherits what it omits', async () => {
  const root = json(
    await grantctl([
      'grants',
      'create',
      '--connection',
      world.connectionId,
      '--pod',
      world.podId,
      '--tools',
      'repos.read_file,issues.create_comment',
      '--write-mode',
      'write',
      '--calls',
      '20',
      '--repositories',
      'acme/*',
      '--refs',
      'refs/heads/*',
      '--paths',
      'docs/**,src/**',
      '--json',
    ]),
  );
  expect(root.resources).toEqual({ repositories: ['acme/*'], refs: ['refs/heads/*'], paths: ['docs/**', 'src/**'] });

  const child = json(
    await grantctl([
      'grants',
      'attenuate',
      root.id,
      '--tools',
      'repos.read_file',
      '--write-mode',
      'read',
      '--calls',
      '5',
      '--refs',
      'refs/heads/main',
      '--paths',
      'docs/**',
      '--json',
    ]),
  );
  const viaApi = await service.http.get(`/api/grants/${child.id}`).set(world.agent.auth).expect(200);
  expect(child).toEqual(viaApi.body);
  expect(child).toMatchObject({
    parentId: root.id,
    rootId: root.id,
    depth: 1,
    tools: ['repos.read_file'],
    writeMode: 'read',
    budget: { calls: 5, windowMs: root.budget.windowMs },
    expiresAt: root.expiresAt,
    resources: { repositories: ['acme/*'], refs: ['refs/heads/main'], paths: ['docs/**'] },
  });

  // As a table: the header and the child's row; a seat target narrows the pod to the agent's seat.
  const table = await grantctl(['grants', 'attenuate', child.id, '--seat', world.agent.agentId]);
  expect(table).toMatchObject({ code: 0, stderr: '' });
  const lines = table.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^ID\s+STATUS\s+TARGET/);
  expect(lines[1]).toMatch(new RegExp(`^grt_\\S+\\s+active\\s+seat\\s+${world.agent.agentId}\\s+read\\s+repos\\.read_file\\s`));
});

it('beyond the parent: exit 1, the problem names each widened field and the tool at fault; no child is made', async () => {
  const root = await podGrant({ tools: ['repos.read_file'], writeMode: 'read', budget: { calls: 10 } });
  const problem = refused(
    await grantctl([
      'grants',
      'attenuate',
      root.id,
      '--tools',
      'repos.read_file,issues.create_comment',
      '--write-mode',
      'write',
      '--calls',
      '50',
    ]),
  );
  expect(problem).toMatchObject({ status: 422, code: 'grant_widening', detail: expect.stringContaining('tools') });
  expect(problem.fault).toContain("tools: issues.create_comment (the parent's: repos.read_file)");
  expect(problem.fault).toContain("writeMode: write (the parent's: read)");
  expect(problem.fault).toContain("budget.calls: 50 (the parent's: 10)");
  expect(problem.hint).toContain(`grantctl grants show ${root.id}`);
  expect(await childrenOf(root.id)).toEqual([]);
});

it("patterns beyond the parent's name the resource dimension; a pattern no canonical value matches names its field", async () => {
  const root = await podGrant({ resources: { repositories: ['acme/*'], paths: ['docs/**'] } });
  const wider = refused(await grantctl(['grants', 'attenuate', root.id, '--repositories', 'other/*']));
  expect(wider).toMatchObject({ status: 422, code: 'grant_widening', fault: "resources.repositories: other/* (the parent's: acme/*)" });

  const climbing = refused(await grantctl(['grants', 'attenuate', root.id, '--paths', 'docs/../secrets/**']));
  expect(climbing).toMatchObject({ status: 400, code: 'resource_pattern_invalid', fault: 'resources.paths' });
  expect(await childrenOf(root.id)).toEqual([]);
});

it('a count that is not a whole number is bad usage, named, and nothing is sent', async () => {
  const root = await podGrant({});
  for (const [flag, value] of [
    ['--calls', '1e999'],
    ['--calls', '2.5'],
    ['--window-ms', 'ten'],
    ['--calls', '99999999999999999999'],
  ]) {
    expect(refused(await grantctl(['grants', 'attenuate', root.id, flag!, value!]))).toEqual({
      code: 'usage',
      detail: `${flag} takes a whole number (got ${JSON.stringify(value)})`,
    });
  }
  expect(await childrenOf(root.id)).toEqual([]);
});

it('an unknown or hostile parent id: 404 naming that id, as given', async () => {
  const unknown = 'grt_01jzzzzzzzzzzzzzzzzzzzzzzz';
  expect(refused(await grantctl(['grants', 'attenuate', unknown, '--calls', '1']))).toMatchObject({
    status: 404,
    code: 'not_found',
    fault: unknown,
    hint: expect.stringContaining(`${unknown} does not exist`),
  });
  // A path in the id stays inside the one path segment (percent-encoded), never another route.
  for (const hostile of ['../../approvals', '<b>x</b>', '%2e%2e']) {
    expect(refused(await grantctl(['grants', 'attenuate', hostile]))).toMatchObject({ status: 404, fault: hostile });
  }
});

it('the wrong or a missing agent token: the refusal says to set GRANT_BROKER_AGENT_TOKEN, never echoing a token', async () => {
  const root = await podGrant({});
  const unset = refused(await grantctl(['grants', 'attenuate', root.id], ''));
  expect(unset).toMatchObject({
    status: 401,
    fault: 'GRANT_BROKER_AGENT_TOKEN',
    hint: expect.stringMatching(/^GRANT_BROKER_AGENT_TOKEN is not set/),
  });

  const bogus = 'art_bogus0000000000000000000000000000';
  const wrong = await grantctl(['grants', 'attenuate', root.id], bogus);
  expect(refused(wrong)).toMatchObject({ status: 401, hint: expect.stringContaining('the token in GRANT_BROKER_AGENT_TOKEN was refused') });
  expect(wrong.stderr).not.toContain(bogus);

  // A person's token where the agent's belongs: 403, naming the variable.
  const person = await grantctl(['grants', 'attenuate', root.id], world.owner.token);
  expect(refused(person)).toMatchObject({ status: 403, code: 'credential_not_accepted', fault: 'GRANT_BROKER_AGENT_TOKEN' });
  expect(person.stderr).not.toContain(world.owner.token);
  expect(await childrenOf(root.id)).toEqual([]);
});

it("a stopped runtime: 409, and the hint says how to start it; an agent outside the parent's audience is named too", async () => {
  const other = await installAgent(service, world.owner, world.podId, 'stopped-bot');
  const root = await podGrant({});
  await service.http.post(`/api/registry/pods/${world.podId}/agents/stopped-bot/runtime-stop`).set(world.owner.auth).expect(200);
  expect(refused(await grantctl(['grants', 'attenuate', root.id], other.token))).toMatchObject({
    status: 409,
    code: 'runtime_stopped',
    hint: expect.stringContaining('grantctl agents start'),
  });

  const listed = await podGrant({ audience: [world.owner.userId] });
  expect(refused(await grantctl(['grants', 'attenuate', listed.id]))).toMatchObject({ status: 403, fault: listed.id });
});
