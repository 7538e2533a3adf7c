import { startedService } from '../support/service';
import { expectProblem } from '../support/problems';
import { human, installAgent, podWith, type Human } from '../support/world';

/** GET /api/pods: a person's pods with their role in each, paged; nobody else's pods, ever. */
const service = startedService();

interface Listed {
  id: string;
  name: string;
  createdBy: string;
  createdAt: string;
  role: string;
}

/** Every page of the caller's list, in order, `limit` at a time. */
async function allPages(who: Human, limit: number): Promise<{ items: Listed[]; pages: number }> {
  const items: Listed[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const res = await service.http
      .get('/api/pods')
      .query({ limit, ...(cursor ? { cursor } : {}) })
      .set(who.auth)
      .expect(200);
    expect(res.body.items.length).toBeLessThanOrEqual(limit);
    items.push(...res.body.items);
    cursor = res.body.nextCursor ?? undefined;
    pages += 1;
  } while (cursor);
  return { items, pages };
}

it('lists the pods the caller is in, newest first, with their role in each, and none of anyone else', async () => {
  const alice = human(service, 'alice');
  const bob = human(service, 'bob');
  const owned = await podWith(service, alice);
  const asAdmin = await podWith(service, bob, [{ who: alice, role: 'admin' }]);
  const asMember = await podWith(service, bob, [{ who: alice }]);
  const bobsAlone = await podWith(service, bob);

  const res = await service.http.get('/api/pods').set(alice.auth).expect(200);
  expect(res.body.nextCursor).toBeNull();
  expect(res.body.items).toEqual([
    { id: asMember, name: 'Test pod', createdBy: bob.userId, createdAt: expect.any(String), role: 'member' },
    { id: asAdmin, name: 'Test pod', createdBy: bob.userId, createdAt: expect.any(String), role: 'admin' },
    { id: owned, name: 'Test pod', createdBy: alice.userId, createdAt: expect.any(String), role: 'owner' },
  ]);
  const read = await service.http.get(`/api/pods/${owned}`).set(alice.auth).expect(200);
  expect(res.body.items[2]).toEqual({ ...read.body, role: 'owner' });
  expect(res.body.items.map((pod: Listed) => pod.id)).not.toContain(bobsAlone);
});

it('answers a person in no pod an empty page, and drops a pod at once when they are removed from it', async () => {
  const owner = human(service, 'owner');
  const leaver = human(service, 'leaver');
  const podId = await podWith(service, owner, [{ who: leaver }]);
  expect((await service.http.get('/api/pods').set(human(service, 'nobody').auth).expect(200)).body).toEqual({
    items: [],
    nextCursor: null,
  });

  expect((await service.http.get('/api/pods').set(leaver.auth).expect(200)).body.items.map((pod: Listed) => pod.id)).toEqual([podId]);
  await service.http.delete(`/api/pods/${podId}/members/${leaver.userId}`).set(owner.auth).expect(204);
  expect((await service.http.get('/api/pods').set(leaver.auth).expect(200)).body).toEqual({ items: [], nextCursor: null });
});

it('pages with an opaque cursor: every pod once, in order, and a last page without a cursor', async () => {
  const many = human(service, 'many');
  const created: string[] = [];
  for (let i = 0; i < 5; i += 1) created.push(await podWith(service, many));
  const { items, pages } = await allPages(many, 2);
  expect(pages).toBe(3);
  expect(items.map((pod) => pod.id)).toEqual([...created].reverse());
  expect((await allPages(many, 5)).pages).toBe(1);
});

it("refuses an installed agent's runtime token (it has its own list) and no token at all", async () => {
  const owner = human(service, 'owner');
  const agent = await installAgent(service, owner, await podWith(service, owner));
  expectProblem(await service.http.get('/api/pods').set(agent.auth), 403, 'credential_not_accepted');
  expectProblem(await service.http.get('/api/pods'), 401, 'unauthenticated');
});

describe('hostile paging', () => {
  const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  it.each([
    ['not base64 JSON', '%%%'],
    ['JSON that is not a position', forged({ at: '2026-01-01T00:00:00Z' })],
    ['a date that is no date', forged(['1e999', 'pod_x'])],
    ['a number for the id', forged(['2026-01-01T00:00:00.000Z', 1])],
    ['NUL inside', forged(['2026-01-01T00:00:00.000Z', 'pod_\u0000'])],
    ['a lone surrogate inside', forged(['2026-01-01T00:00:00.000Z', 'pod_\ud800'])],
    ['a year Postgres cannot hold', forged(['-271821-04-20T00:00:00.000Z', 'pod_x'])],
    ['SQL', forged(['2026-01-01T00:00:00.000Z', "pod_x') or ('1'='1"])],
    ['longer than any cursor issued', 'A'.repeat(600)],
  ])('a cursor that is %s is a 400 naming query.cursor', async (_what, cursor) => {
    const res = await service.http.get('/api/pods').query({ cursor }).set(human(service, 'attacker').auth);
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([expect.objectContaining({ path: 'query.cursor' })]);
  });

  it.each(['0', '201', '1e999', '2.5', '<b>9</b>'])('limit=%s is a 400', async (limit) => {
    expectProblem(await service.http.get('/api/pods').query({ limit }).set(human(service, 'attacker').auth), 400, 'invalid_request');
  });

  it("a well-formed cursor naming someone else's pod shows nothing of it", async () => {
    const victim = human(service, 'victim');
    const attacker = human(service, 'attacker');
    const victimPod = await podWith(service, victim);
    const own = await podWith(service, attacker);
    const res = await service.http
      .get('/api/pods')
      .query({ cursor: forged(['2999-01-01T00:00:00.000Z', victimPod]) })
      .set(attacker.auth)
      .expect(200);
    expect(res.body).toEqual({ items: [expect.objectContaining({ id: own, role: 'owner' })], nextCursor: null });
  });
});
