import { expectProblem } from '../support/problems';
import { startedServiceWith } from '../support/service';
import { resourceWorld } from '../support/resource-world';

/**
 * Through HTTP and the compiled policy: a resource value is matched only in its
 * canonical spelling. The policy's own `opa test` suite holds the same rules; this holds the WASM
 * build to them (its regex, byte counting and string builtins are its own implementations).
 */
const { service, world } = startedServiceWith(resourceWorld);

const createGrant = (resources: unknown) => world.createGrant(resources ? { resources } : {});
const check = (grantId: string, args: Record<string, unknown>) => world.check(grantId, 'repos.read_file', args);

async function grantOn(resources: unknown): Promise<string> {
  const res = await createGrant(resources);
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const CANONICAL = { repository: 'acme/api', ref: 'refs/heads/main', path: 'docs/guide.md' };

/** Hostile spellings, by dimension; each must be refused whatever the grant's patterns. */
const HOSTILE: Record<'repository' | 'ref' | 'path', string[]> = {
  repository: [
    'acme/..',
    '../api',
    './api',
    'acme/.',
    'acme',
    'acme/api/extra',
    '/acme/api',
    'acme/api/',
    'acme//api',
    'acme\\api',
    'acme/api%2f..',
    'acme/a%2e',
    'acme/ api',
    'acme/apï',
    'acme/api\n',
    '',
    `acme/${'n'.repeat(101)}`,
  ],
  ref: [
    '@',
    'refs/heads/../main',
    'refs/heads/a..b',
    'refs//heads',
    '/refs/heads/x',
    'refs/heads/x/',
    'refs/heads/x.',
    'refs/heads/.hidden',
    'refs/heads/x.lock',
    'refs/heads/x@{1}',
    'refs\\heads',
    'refs/heads/a b',
    'refs/heads/a~1',
    'refs/heads/a^',
    'refs/heads/a:b',
    'refs/heads/a?',
    'refs/heads/a*',
    'refs/heads/a[',
    'refs/heads/\u0001',
    'refs/heads/\u007f',
    'refs/heads/%2e%2e',
    'refs/heads%2Fx',
    'r'.repeat(1025),
    'é'.repeat(513),
  ],
  path: [
    '/etc/passwd',
    '..',
    '.',
    'docs/..',
    'docs/../src/key.pem',
    'docs/../../../../evil/secret/contents/creds.txt',
    'docs/./x',
    './docs/x',
    'docs//x',
    'docs//..',
    'docs/',
    'docs\\..\\x',
    'docs/..\\..\\x',
    'docs/a\nb',
    'docs/a\u001f',
    'docs/a\u009b',
    'docs/%2e%2e/x',
    'docs/%2E%2E/secret',
    'docs%2f..%2fx',
    'docs/%5c..',
    'docs/%00',
    `docs/${'p'.repeat(4092)}`,
    `docs/${'€'.repeat(1364)}`,
  ],
};

const TABLE = Object.entries(HOSTILE).flatMap(([dimension, values]) => values.map((value) => [dimension, value] as const));

describe('a hostile spelling is denied resource_invalid', () => {
  let constrainedId: string;
  let unconstrainedId: string;
  beforeAll(async () => {
    // Patterns a text match would let every hostile value above through (`docs/**` matches `docs/../x`).
    constrainedId = await grantOn({ repositories: ['acme/api', 'acme/*'], paths: ['docs/**', '**'], refs: ['refs/heads/*', '*'] });
    unconstrainedId = await grantOn(undefined);
  });

  it('is a table of more than 60 spellings', () => expect(TABLE.length).toBeGreaterThan(60));

  it.each(TABLE)('%s %j', async (dimension, value) => {
    for (const grantId of [constrainedId, unconstrainedId]) {
      const res = await check(grantId, { ...CANONICAL, [dimension]: value });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ decision: 'deny', reason: 'resource_invalid' });
    }
  });

  it('the audit’s walk out of docs/** is denied, and the canonical call beside it allowed', async () => {
    const grantId = await grantOn({ repositories: ['acme/api'], paths: ['docs/**'] });
    const escape = await check(grantId, { repository: 'acme/api', path: 'docs/../../../../evil/secret/contents/creds.txt' });
    expect(escape.body).toMatchObject({ decision: 'deny', reason: 'resource_invalid' });
    expect((await check(grantId, { repository: 'acme/api', path: 'docs/../src/key.pem' })).body.reason).toBe('resource_invalid');
    expect((await check(grantId, { repository: 'acme/api', path: 'docs/a/b.md' })).body.reason).toBe('allowed');
  });

  it('a NUL or a lone surrogate never reaches the policy: the body is a 400', async () => {
    for (const value of ['docs/a\u0000', 'docs/\ud800']) {
      expectProblem(await check(constrainedId, { ...CANONICAL, path: value }), 400, 'invalid_request');
    }
  });
});

describe('canonical spellings are matched as before', () => {
  const CANONICAL_VALUES: Array<[string, string]> = [
    ['repository', 'Acme-1/api.v2_x'],
    ['repository', 'a.b/..c'],
    ['repository', `acme/${'n'.repeat(100)}`],
    ['ref', 'main'],
    ['ref', 'refs/tags/v1.2.3'],
    ['ref', 'refs/heads/ünïcode'],
    ['ref', 'r'.repeat(1024)],
    ['path', '.github/workflows/ci.yml'],
    ['path', 'docs/...'],
    ['path', 'docs/..x/.y'],
    ['path', 'docs/a b#c?.md'],
    ['path', 'docs/100%'],
    ['path', `docs/${'p'.repeat(4091)}`],
    ['path', `docs/${'€'.repeat(1363)}`],
  ];

  it.each(CANONICAL_VALUES)('%s %j is allowed', async (dimension, value) => {
    const grantId = await grantOn(undefined);
    // The whole answer, so a refusal for another reason (a 503 under load) names itself.
    expect((await check(grantId, { ...CANONICAL, [dimension]: value })).body).toMatchObject({ reason: 'allowed' });
  });
});

describe('patterns that could only match non-canonical values', () => {
  it.each([
    [{ paths: ['docs/../*'] }, 'paths'],
    [{ paths: ['docs/**', '**/..'] }, 'paths'],
    [{ refs: ['refs/heads/*.lock'] }, 'refs'],
    [{ refs: ['refs/heads/.*'] }, 'refs'],
    [{ repositories: ['acme/..'] }, 'repositories'],
  ])('are refused on create: %j', async (resources, dimension) => {
    const res = await createGrant(resources);
    expectProblem(res, 400, 'resource_pattern_invalid');
    expect(res.body.errors).toEqual([expect.objectContaining({ path: `body.resources.${dimension}` })]);
  });

  it('are refused on attenuate, though the parent’s pattern covers them as text', async () => {
    const parentId = await grantOn({ repositories: ['acme/*'], paths: ['docs/**'] });
    const attenuate = (resources: unknown) =>
      service.http.post(`/api/grants/${parentId}/attenuate`).set(world.agent.auth).send({ resources });
    const walked = await attenuate({ paths: ['docs/../*'] });
    expectProblem(walked, 400, 'resource_pattern_invalid');
    expect(walked.body.errors[0].message).toContain('docs/../*');
    expectProblem(await attenuate({ repositories: ['acme/..'] }), 400, 'resource_pattern_invalid');
    expect((await attenuate({ paths: ['docs/api/**'] })).status).toBe(201);
  });
});
