import { expectProblem } from '../support/problems';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { RESOURCE_TOOLS, resourceWorld } from '../support/resource-world';
import { broker, type Human, type InstalledAgent } from '../support/world';
import { uuidOf } from '../support/call-records';

/**
 * Through HTTP: grants constrained to repositories, refs and paths; connection tools
 * that say where those sit in their arguments; a broker check that decides against every level.
 */
let service: TestService;
let world: Awaited<ReturnType<typeof resourceWorld>>;
let owner: Human;
let agent: InstalledAgent;
let connectionId: string;

beforeAll(async () => {
  service = await startService();
  world = await resourceWorld(service);
  ({ owner, agent, connectionId } = world);
});
afterAll(() => service.close());

const createGrant = (body: Record<string, unknown>) => world.createGrant(body);
const check = (grantId: string, tool: string, args: Record<string, unknown>) => world.check(grantId, tool, args);

async function grantOn(resources: unknown, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await createGrant({ resources, ...extra });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe('the grant record', () => {
  it('returns resources, and null for an unconstrained grant', async () => {
    const constrained = await createGrant({ resources: { repositories: ['acme/api'], paths: ['docs/**'] } });
    expect(constrained.body.resources).toEqual({ repositories: ['acme/api'], paths: ['docs/**'] });
    const read = await service.http.get(`/api/grants/${constrained.body.id}`).set(owner.auth);
    expect(read.body.resources).toEqual({ repositories: ['acme/api'], paths: ['docs/**'] });
    expect((await createGrant({})).body.resources).toBeNull();
  });

  it('the connection shows where each tool names its resources', async () => {
    const res = await service.http.get(`/api/connections/${connectionId}`).set(owner.auth);
    expect(res.body.tools).toEqual(expect.arrayContaining(RESOURCE_TOOLS));
  });

  it.each([
    ['a repository of three segments', { repositories: ['acme/api/x'] }],
    ['a repository without owner', { repositories: ['acme'] }],
    ['** outside paths', { repositories: ['acme/**'] }],
    ['** inside a path segment', { paths: ['docs/a**'] }],
    ['glob syntax', { repositories: ['acme/[ab]pi'] }],
    ['a brace', { refs: ['refs/heads/{a,b}'] }],
    ['an empty segment', { paths: ['docs//x'] }],
    ['a NUL', { paths: ['docs/\u0000'] }],
    ['a space', { paths: ['my docs/x'] }],
    ['no pattern', { repositories: [] }],
    ['51 patterns', { repositories: Array.from({ length: 51 }, (_, i) => `acme/r${i}`) }],
    ['duplicates', { repositories: ['acme/api', 'acme/api'] }],
    ['an unknown dimension', { branches: ['main'] }],
  ])('refuses %s with a 400', async (_label, resources) => {
    expectProblem(await createGrant({ resources }), 400, 'invalid_request');
  });

  it('refuses a tool resource that is not a JSON pointer', async () => {
    const res = await service.http
      .post('/api/connections')
      .set(owner.auth)
      .send({
        kind: 'code_hosting_app',
        brokerId: (await broker(service)).id,
        externalInstallationId: 'ext-bad-pointer',
        tools: [{ name: 'repos.read_file', access: 'read', resource: { repository: 'repository' } }],
      });
    expectProblem(res, 400, 'invalid_request');
  });
});

describe('the broker check', () => {
  it('allows a call on a repository the grant names and denies another with resource_not_allowed', async () => {
    const grantId = await grantOn({ repositories: ['acme/api'] });
    const allowed = await check(grantId, 'repos.read_file', { repository: 'acme/api', ref: 'main', path: 'README.md' });
    expect(allowed.body).toMatchObject({ decision: 'allow', reason: 'allowed' });
    const denied = await check(grantId, 'repos.read_file', { repository: 'acme/web', ref: 'main', path: 'README.md' });
    expect(denied.body).toMatchObject({ decision: 'deny', reason: 'resource_not_allowed' });
  });

  it('matches refs and paths by pattern', async () => {
    const grantId = await grantOn({ refs: ['refs/heads/feature/*'], paths: ['docs/**'] });
    const call = (ref: string, path: string) => check(grantId, 'repos.read_file', { repository: 'acme/api', ref, path });
    expect((await call('refs/heads/feature/x', 'docs/a/b.md')).body.reason).toBe('allowed');
    expect((await call('refs/heads/main', 'docs/a/b.md')).body.reason).toBe('resource_not_allowed');
    expect((await call('refs/heads/feature/x', 'src/index.ts')).body.reason).toBe('resource_not_allowed');
  });

  it('fails closed: resource_unknown when the args lack the value, hold a non-string, or the tool names no pointer', async () => {
    const grantId = await grantOn(
      { repositories: ['acme/*'] },
      { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'write' },
    );
    expect((await check(grantId, 'repos.read_file', { path: 'README.md' })).body.reason).toBe('resource_unknown');
    expect((await check(grantId, 'repos.read_file', { repository: ['acme/api'] })).body.reason).toBe('resource_unknown');
    expect((await check(grantId, 'issues.create_comment', { repository: 'acme/api' })).body.reason).toBe('resource_unknown');
  });

  it('reads nested pointers', async () => {
    const grantId = await grantOn({ repositories: ['acme/api'], refs: ['refs/heads/*'] }, { tools: ['repos.push'], writeMode: 'write' });
    const push = (repository: string) => check(grantId, 'repos.push', { target: { repository, ref: 'refs/heads/x' } });
    expect((await push('acme/api')).body.reason).toBe('allowed');
    expect((await push('acme/web')).body.reason).toBe('resource_not_allowed');
  });

  it('an unconstrained grant ignores resources', async () => {
    const grantId = await grantOn(undefined);
    expect((await check(grantId, 'repos.read_file', {})).body.reason).toBe('allowed');
  });
});

describe('attenuation', () => {
  async function attenuate(parentId: string, body: Record<string, unknown>) {
    return service.http.post(`/api/grants/${parentId}/attenuate`).set(agent.auth).send(body);
  }

  it('may narrow acme/* to acme/api, and the child then decides on its own level', async () => {
    const parentId = await grantOn({ repositories: ['acme/*'] });
    const child = await attenuate(parentId, { resources: { repositories: ['acme/api'] } });
    expect(child.status).toBe(201);
    expect(child.body.resources).toEqual({ repositories: ['acme/api'] });
    expect((await check(child.body.id, 'repos.read_file', { repository: 'acme/api' })).body.reason).toBe('allowed');
    expect((await check(child.body.id, 'repos.read_file', { repository: 'acme/web' })).body.reason).toBe('resource_not_allowed');
    expect((await check(parentId, 'repos.read_file', { repository: 'acme/web' })).body.reason).toBe('allowed');
  });

  it('may not widen: 422 grant_widening naming resources', async () => {
    const parentId = await grantOn({ repositories: ['acme/api-*'] });
    for (const repositories of [['acme/*'], ['acme/api-*', 'other/x'], ['*/api-v1']]) {
      const res = await attenuate(parentId, { resources: { repositories } });
      expectProblem(res, 422, 'grant_widening');
      expect(res.body.detail).toContain('resources');
    }
  });

  it('inherits what it does not name, dimension by dimension', async () => {
    const parentId = await grantOn({ repositories: ['acme/*'], paths: ['docs/**'] });
    const inherited = await attenuate(parentId, {});
    expect(inherited.body.resources).toEqual({ repositories: ['acme/*'], paths: ['docs/**'] });
    const narrowed = await attenuate(parentId, { resources: { paths: ['docs/api/*'] } });
    expect(narrowed.status).toBe(201);
    expect(narrowed.body.resources).toEqual({ repositories: ['acme/*'], paths: ['docs/api/*'] });
  });

  it('may add a constraint to an unconstrained parent', async () => {
    const parentId = await grantOn(undefined);
    const child = await attenuate(parentId, { resources: { refs: ['refs/heads/feature/*'] } });
    expect(child.status).toBe(201);
    expect((await check(child.body.id, 'repos.read_file', { ref: 'refs/heads/main' })).body.reason).toBe('resource_not_allowed');
  });
});

describe('the arguments', () => {
  it('are never written to the database or the logs', async () => {
    const marker = `secret-${process.pid}-${Date.now()}`;
    const grantId = await grantOn({ repositories: ['acme/*'] });
    await check(grantId, 'repos.read_file', { repository: 'acme/api', path: marker, body: { nested: marker } });
    await check(grantId, 'repos.read_file', { repository: `acme/${marker}` });
    const rows = await service.deps.db.raw(`select row_to_json(c)::text as row from call_records c where grant_id = ?::uuid`, [
      uuidOf('grant', grantId),
    ]);
    expect(rows.rows).toHaveLength(2);
    for (const { row } of rows.rows as Array<{ row: string }>) expect(row).not.toContain(marker);
    // The repository and path a call touches are kept in its decision event (`input.resource`, for
    // audits and `policy impact`); nothing else of its args is, anywhere in the logs.
    await decisionsWritten(); // decision events are written after the answer
    const lines = service.logs.map((line) => JSON.parse(line));
    const kept = lines
      .filter((line) => line.msg === 'decision' && line.path === 'broker/check/decision')
      .map((line) => line.input.resource);
    expect(kept).toEqual(expect.arrayContaining([{ repository: 'acme/api', path: marker }, { repository: `acme/${marker}` }]));
    const elsewhere = lines.map((line) => (line.msg === 'decision' ? { ...line, input: { ...line.input, resource: null } } : line));
    expect(JSON.stringify(elsewhere)).not.toContain(marker);
  });
});
