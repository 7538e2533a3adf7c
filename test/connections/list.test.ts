import { startService, type TestService } from '../support/service';
import { expectProblem } from '../support/problems';
import { broker, connection, human, installAgent, podWith, TOOLS } from '../support/world';

/** GET /api/connections: the connections a person may read (their own), with tools, paged. */
let service: TestService;
let brokerId: string;

beforeAll(async () => {
  service = await startService();
  brokerId = (await broker(service, 'connections-list-broker')).id;
});
afterAll(() => service.close());

const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

it('lists the caller’s connections newest first, each as GET /api/connections/:id gives it, and nobody else’s', async () => {
  const alice = human(service, 'alice');
  const bob = human(service, 'bob');
  const first = await connection(service, alice, brokerId);
  const second = await connection(service, alice, brokerId, { kind: 'chat_app', tools: [{ name: 'messages.post', access: 'write' }] });
  const bobs = await connection(service, bob, brokerId);

  const res = await service.http.get('/api/connections').set(alice.auth).expect(200);
  expect(res.body.nextCursor).toBeNull();
  const each = await Promise.all(
    [second, first].map(async ({ id }) => (await service.http.get(`/api/connections/${id}`).set(alice.auth).expect(200)).body),
  );
  expect(res.body.items).toEqual(each);
  expect(res.body.items[1].tools).toEqual([...TOOLS].sort((a, b) => a.name.localeCompare(b.name)));
  expect(JSON.stringify(res.body)).not.toContain(bobs.id);
  expect((await service.http.get('/api/connections').set(bob.auth).expect(200)).body.items.map((c: { id: string }) => c.id)).toEqual([
    bobs.id,
  ]);
});

it('shows a pod member nothing of the connection behind their pod’s grants (the read rule is the owner’s alone)', async () => {
  const owner = human(service, 'owner');
  const member = human(service, 'member');
  await podWith(service, owner, [{ who: member }]);
  const owned = await connection(service, owner, brokerId);
  expect((await service.http.get('/api/connections').set(member.auth).expect(200)).body).toEqual({ items: [], nextCursor: null });
  expectProblem(await service.http.get(`/api/connections/${owned.id}`).set(member.auth), 404, 'not_found');
});

it('keeps a disconnected connection in the list, with its status', async () => {
  const owner = human(service, 'owner');
  const { id } = await connection(service, owner, brokerId);
  await service.http.patch(`/api/connections/${id}`).set(owner.auth).send({ status: 'disconnected' }).expect(200);
  const res = await service.http.get('/api/connections').set(owner.auth).expect(200);
  expect(res.body.items).toEqual([expect.objectContaining({ id, status: 'disconnected' })]);
});

it('pages with an opaque cursor: every connection once, in order', async () => {
  const owner = human(service, 'many');
  const created: string[] = [];
  for (let i = 0; i < 5; i += 1) created.push((await connection(service, owner, brokerId)).id);
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const res = await service.http
      .get('/api/connections')
      .query({ limit: 2, ...(cursor ? { cursor } : {}) })
      .set(owner.auth)
      .expect(200);
    expect(res.body.items.length).toBeLessThanOrEqual(2);
    seen.push(...res.body.items.map((c: { id: string }) => c.id));
    cursor = res.body.nextCursor ?? undefined;
    pages += 1;
  } while (cursor);
  expect(pages).toBe(3);
  expect(seen).toEqual([...created].reverse());
});

it('refuses an installed agent (403) and no token (401)', async () => {
  const owner = human(service, 'owner');
  const agent = await installAgent(service, owner, await podWith(service, owner));
  expectProblem(await service.http.get('/api/connections').set(agent.auth), 403, 'credential_not_accepted');
  expectProblem(await service.http.get('/api/connections'), 401, 'unauthenticated');
});

it.each([
  ['not base64 JSON', '%%%'],
  ['a date that is no date', forged(['1e999', 'con_x'])],
  ['NUL inside', forged(['2026-01-01T00:00:00.000Z', 'con_\u0000'])],
  ['HTML', forged(['2026-01-01T00:00:00.000Z', '<script>alert(1)</script>'])],
  ['a path', forged(['2026-01-01T00:00:00.000Z', '../../etc/passwd'])],
])('a cursor that is %s is a 400 naming query.cursor', async (_what, cursor) => {
  const res = await service.http.get('/api/connections').query({ cursor }).set(human(service, 'attacker').auth);
  expectProblem(res, 400, 'invalid_request');
  expect(res.body.errors).toEqual([expect.objectContaining({ path: 'query.cursor' })]);
});

it("a well-formed cursor naming someone else's connection shows nothing of it", async () => {
  const victim = await connection(service, human(service, 'victim'), brokerId);
  const attacker = human(service, 'attacker');
  const res = await service.http
    .get('/api/connections')
    .query({ cursor: forged(['2999-01-01T00:00:00.000Z', victim.id]) })
    .set(attacker.auth)
    .expect(200);
  expect(res.body).toEqual({ items: [], nextCursor: null });
});
