import { brokerWorld } from '../support/broker-world';
import { grantctl as runGrantctl, type GrantctlRun } from '../support/grantctl';
import { startedServiceWith } from '../support/service';
import { human, podWith, rootGrant } from '../support/world';

/**
 * `grantctl pods list|show` and `connections show` against the real service, and what a person's
 * refusals name: the id that is not there (or not theirs to see), the tool a connection lacks, the
 * variable to set on a 401.
 */
const { service, world } = startedServiceWith(brokerWorld);

const grantctl = (args: string[], token: string = world.owner.token, agentToken: string = world.agent.token) =>
  runGrantctl(args, { url: service.baseUrl, token, agentToken });
const json = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
};
const refused = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 1, stdout: '' });
  return JSON.parse(run.stderr);
};

it("pods list: the installed agent's pods, as the API lists them", async () => {
  const viaApi = await service.http.get('/api/agents/runtime/pods').set(world.agent.auth).expect(200);
  expect(json(await grantctl(['pods', 'list', '--json']))).toEqual(viaApi.body);
  const table = await grantctl(['pods', 'list']);
  expect(table.stdout.trimEnd().split('\n')).toEqual([expect.stringMatching(/^ID\s+NAME$/), `${world.podId}  Test pod`]);
  // A person's token is not an agent's: the refusal names the variable.
  expect(refused(await grantctl(['pods', 'list'], world.owner.token, world.owner.token))).toMatchObject({
    status: 403,
    fault: 'GRANT_BROKER_AGENT_TOKEN',
  });
});

it('pods context: what the agent sees of its pod, the grants it can use now among them; another pod is a 404 naming it', async () => {
  const usable = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId });
  const notForIt = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    { audience: [world.owner.userId] },
  );
  const viaApi = await service.http.get(`/api/agents/runtime/pods/${world.podId}/context`).set(world.agent.auth).expect(200);
  expect(json(await grantctl(['pods', 'context', world.podId, '--json']))).toEqual(viaApi.body);
  const table = (await grantctl(['pods', 'context', world.podId])).stdout;
  expect(table).toMatch(new RegExp(`^${world.podId}  Test pod  as bot \\(${world.agent.agentId}\\), runtime \\w+$`, 'm'));
  expect(table).toMatch(new RegExp(`^${world.member.userId}\\s+human\\s+member$`, 'm'));
  expect(table).toMatch(new RegExp(`^${usable.id}\\s+read\\s+repos\\.read_file,pulls\\.list\\s`, 'm'));
  expect(table).not.toContain(notForIt.id);

  const elsewhere = await podWith(service, human(service, 'elsewhere'));
  expect(refused(await grantctl(['pods', 'context', elsewhere]))).toMatchObject({ status: 404, fault: elsewhere });
});

it('pods show: the pod as the API gives it; as a table, with its members', async () => {
  const viaApi = await service.http.get(`/api/pods/${world.podId}`).set(world.owner.auth).expect(200);
  expect(json(await grantctl(['pods', 'show', world.podId, '--json']))).toEqual(viaApi.body);
  const table = await grantctl(['pods', 'show', world.podId]);
  expect(table).toMatchObject({ code: 0, stderr: '' });
  expect(table.stdout).toMatch(new RegExp(`^${world.podId}\\s+Test pod\\s+${world.owner.userId}\\s`, 'm'));
  expect(table.stdout).toMatch(new RegExp(`^${world.owner.userId}\\s+human\\s+owner\\s`, 'm'));
  expect(table.stdout).toMatch(new RegExp(`^${world.member.userId}\\s+human\\s+member\\s`, 'm'));
  expect(table.stdout).toMatch(new RegExp(`^${world.agent.agentId}\\s+agent\\s+member\\s`, 'm'));

  // Someone outside the pod sees what an unknown id gets: 404 naming the id.
  const stranger = human(service, 'stranger');
  expect(refused(await grantctl(['pods', 'show', world.podId], stranger.token))).toMatchObject({ status: 404, fault: world.podId });
  expect(refused(await grantctl(['pods', 'show', 'pod_01jzzzzzzzzzzzzzzzzzzzzzzz']))).toMatchObject({
    status: 404,
    fault: 'pod_01jzzzzzzzzzzzzzzzzzzzzzzz',
  });
});

it('connections show: the connection and its tools to its owner; a 404 naming the id to anyone else', async () => {
  const viaApi = await service.http.get(`/api/connections/${world.connectionId}`).set(world.owner.auth).expect(200);
  expect(json(await grantctl(['connections', 'show', world.connectionId, '--json']))).toEqual(viaApi.body);
  const table = (await grantctl(['connections', 'show', world.connectionId])).stdout;
  expect(table).toMatch(new RegExp(`^${world.connectionId}\\s+code_hosting_app\\s+connected\\s+${world.broker.id}\\s`, 'm'));
  expect(table).toMatch(/^TOOL\s+ACCESS\s+RESOURCE$/m);
  expect(table).toMatch(/^issues\.create_comment\s+write$/m);
  expect(table).toMatch(/^repos\.read_file\s+read$/m);

  // A member of the owner's pod is not the connection's owner.
  const asMember = refused(await grantctl(['connections', 'show', world.connectionId], world.member.token));
  expect(asMember).toMatchObject({ status: 404, code: 'not_found', fault: world.connectionId });
  expect(asMember.hint).toContain('may not see it');
});

it('grants create names the tool the connection lacks, a write tool under read mode, the target and the connection', async () => {
  const create = (...extra: string[]) => grantctl(['grants', 'create', '--connection', world.connectionId, '--pod', world.podId, ...extra]);
  expect(refused(await create('--tools', 'repos.read_file,nope.tool'))).toMatchObject({
    status: 422,
    code: 'tool_not_enabled',
    fault: 'tools: nope.tool',
    hint: expect.stringContaining('repos.read_file'),
  });
  expect(refused(await create('--tools', 'repos.read_file,issues.create_comment'))).toMatchObject({
    status: 422,
    code: 'grant_widening',
    fault: 'tools: issues.create_comment (write) under writeMode read',
  });
  const otherPod = 'pod_01jzzzzzzzzzzzzzzzzzzzzzzz';
  const target = await grantctl(['grants', 'create', '--connection', world.connectionId, '--pod', otherPod, '--tools', 'repos.read_file']);
  expect(refused(target)).toMatchObject({ status: 422, code: 'target_not_allowed', fault: `pod ${otherPod}` });
  const missing = 'con_01jzzzzzzzzzzzzzzzzzzzzzzz';
  const unknown = await grantctl(['grants', 'create', '--connection', missing, '--pod', world.podId, '--tools', 'repos.read_file']);
  expect(refused(unknown)).toMatchObject({ status: 404, fault: missing });
  // A connection that is not yours looks like one that does not exist.
  const strangers = await grantctl(
    ['grants', 'create', '--connection', world.connectionId, '--pod', world.podId, '--tools', 'repos.read_file'],
    world.member.token,
  );
  expect(refused(strangers)).toMatchObject({ status: 404, fault: world.connectionId });
});

it('a 401 names GRANT_BROKER_TOKEN: unset, or refused, never echoed', async () => {
  for (const args of [
    ['grants', 'show', 'grt_x'],
    ['pods', 'show', world.podId],
    ['connections', 'show', world.connectionId],
    ['approvals', 'list'],
  ]) {
    expect(refused(await grantctl(args, ''))).toMatchObject({
      status: 401,
      fault: 'GRANT_BROKER_TOKEN',
      hint: expect.stringMatching(/^GRANT_BROKER_TOKEN is not set: set it to a person's token/),
    });
  }
  const expired = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwiZXhwIjoxfQ.c2lnbmF0dXJl';
  const run = await grantctl(['grants', 'show', 'grt_x'], expired);
  expect(refused(run)).toMatchObject({ status: 401, hint: expect.stringContaining('the token in GRANT_BROKER_TOKEN was refused') });
  expect(run.stderr).not.toContain(expired);
});

it('ids of every kind are named when missing: a grant, a call trail, an approval, an agent', async () => {
  const grant = 'grt_01jzzzzzzzzzzzzzzzzzzzzzzz';
  for (const args of [
    ['grants', 'show', grant],
    ['grants', 'revoke', grant],
    ['grants', 'tree', grant],
    ['calls', grant],
  ]) {
    expect(refused(await grantctl(args))).toMatchObject({ status: 404, fault: grant });
  }
  const approval = 'apr_01jzzzzzzzzzzzzzzzzzzzzzzz';
  expect(refused(await grantctl(['approvals', 'approve', approval]))).toMatchObject({ status: 404, fault: approval });
  expect(refused(await grantctl(['agents', 'status', world.podId, 'nobody']))).toMatchObject({
    status: 404,
    fault: `${world.podId}/nobody`,
  });
});
