import { brokerWorld } from '../support/broker-world';
import { grantctl as runGrantctl, type GrantctlRun } from '../support/grantctl';
import { startedServiceWith } from '../support/service';
import { connection, human, podWith } from '../support/world';

/**
 * `grantctl pods list` for a person (GET /api/pods) beside the installed agent's, and
 * `grantctl connections list` (GET /api/connections): what each lists, whose token it takes, and paging.
 */
const { service, world } = startedServiceWith(brokerWorld);

/** A person's shell: GRANT_BROKER_TOKEN only, unless an agent's token is given too. */
const grantctl = (args: string[], token: string = world.owner.token, agentToken?: string) =>
  runGrantctl(args, { url: service.baseUrl, token, ...(agentToken === undefined ? {} : { agentToken }) });
const json = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
};
const refused = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 1, stdout: '' });
  return JSON.parse(run.stderr);
};

describe('pods list', () => {
  it("with a person's token only: their pods and their role in each, as GET /api/pods gives them", async () => {
    const viaApi = await service.http.get('/api/pods').set(world.member.auth).expect(200);
    expect(viaApi.body.items).toEqual([expect.objectContaining({ id: world.podId, role: 'member' })]);
    expect(json(await grantctl(['pods', 'list', '--json'], world.member.token))).toEqual(viaApi.body);
    const table = await grantctl(['pods', 'list'], world.member.token);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^ID\s+NAME\s+ROLE\s+CREATED$/),
      expect.stringMatching(new RegExp(`^${world.podId}\\s+Test pod\\s+member\\s+\\d{4}-`)),
    ]);
  });

  it("with both tokens set: the agent's pods as before; --as person lists the person's", async () => {
    const agents = await service.http.get('/api/agents/runtime/pods').set(world.agent.auth).expect(200);
    expect(json(await grantctl(['pods', 'list', '--json'], world.owner.token, world.agent.token))).toEqual(agents.body);
    const persons = await service.http.get('/api/pods').set(world.owner.auth).expect(200);
    expect(json(await grantctl(['pods', 'list', '--as', 'person', '--json'], world.owner.token, world.agent.token))).toEqual(persons.body);
    expect(json(await grantctl(['pods', 'list', '--as', 'agent', '--json'], world.owner.token, world.agent.token))).toEqual(agents.body);
  });

  it('pages a person’s list: one page per call, the next cursor on stderr', async () => {
    const busy = human(service, 'busy');
    const older = await podWith(service, busy);
    const newer = await podWith(service, busy);
    const first = await grantctl(['pods', 'list', '--limit', '1'], busy.token);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(newer);
    expect(first.stdout).not.toContain(older);
    const cursor = /^more: repeat with --cursor (\S+)$/m.exec(first.stderr)?.[1];
    expect(cursor).toBeDefined();
    const second = json(await grantctl(['pods', 'list', '--limit', '1', '--cursor', cursor as string, '--json'], busy.token));
    expect(second).toEqual({ items: [expect.objectContaining({ id: older, role: 'owner' })], nextCursor: null });
  });

  it('refuses what it cannot send: a forged cursor (400 naming it), paging an agent’s one page, an unknown --as', async () => {
    expect(refused(await grantctl(['pods', 'list', '--cursor', '%%%'], world.owner.token))).toMatchObject({
      status: 400,
      code: 'invalid_request',
      fault: 'query.cursor',
    });
    const paged = await grantctl(['pods', 'list', '--cursor', 'x'], world.owner.token, world.agent.token);
    expect(paged).toMatchObject({ code: 1, stdout: '' });
    expect(paged.stderr).toContain('--as person');
    const unknown = await grantctl(['pods', 'list', '--as', 'broker'], world.owner.token);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toMatch(/--as.*broker/s);
  });

  it('a 401 names the variable of the list it tried: GRANT_BROKER_TOKEN for a person', async () => {
    expect(refused(await grantctl(['pods', 'list'], ''))).toMatchObject({
      status: 401,
      fault: 'GRANT_BROKER_TOKEN',
      hint: expect.stringMatching(/^GRANT_BROKER_TOKEN is not set/),
    });
    expect(refused(await grantctl(['pods', 'list', '--as', 'agent'], world.owner.token))).toMatchObject({
      status: 401,
      fault: 'GRANT_BROKER_AGENT_TOKEN',
    });
  });
});

describe('connections list', () => {
  it('the connections the person owns, as GET /api/connections gives them; a table with their tools', async () => {
    const viaApi = await service.http.get('/api/connections').set(world.owner.auth).expect(200);
    expect(viaApi.body.items.map((c: { id: string }) => c.id)).toContain(world.connectionId);
    expect(json(await grantctl(['connections', 'list', '--json']))).toEqual(viaApi.body);
    const table = await grantctl(['connections', 'list']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(/^ID\s+KIND\s+STATUS\s+EXTERNAL\s+TOOLS$/m);
    expect(table.stdout).toMatch(
      new RegExp(
        `^${world.connectionId}\\s+code_hosting_app\\s+connected\\s+\\S+\\s+issues\\.create_comment,pulls\\.list,repos\\.read_file$`,
        'm',
      ),
    );
  });

  it("shows a pod member none of the owner's connections, and pages the owner's", async () => {
    expect(json(await grantctl(['connections', 'list', '--json'], world.member.token))).toEqual({ items: [], nextCursor: null });
    const owner = human(service, 'owner-of-two');
    const older = await connection(service, owner, world.broker.id);
    const newer = await connection(service, owner, world.broker.id);
    const first = json(await grantctl(['connections', 'list', '--limit', '1', '--json'], owner.token));
    expect(first.items.map((c: { id: string }) => c.id)).toEqual([newer.id]);
    const second = json(await grantctl(['connections', 'list', '--limit', '1', '--cursor', first.nextCursor, '--json'], owner.token));
    expect(second).toEqual({ items: [expect.objectContaining({ id: older.id })], nextCursor: null });
  });

  it("refuses an agent's token (naming GRANT_BROKER_TOKEN) and no token (401)", async () => {
    expect(refused(await grantctl(['connections', 'list'], world.agent.token))).toMatchObject({
      status: 403,
      code: 'credential_not_accepted',
      fault: 'GRANT_BROKER_TOKEN',
    });
    expect(refused(await grantctl(['connections', 'list'], ''))).toMatchObject({ status: 401, fault: 'GRANT_BROKER_TOKEN' });
  });
});
