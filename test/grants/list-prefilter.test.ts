import { decisions } from '../../src/kernel/decisions/catalogue';
import { newId } from '../../src/kernel/ids';
import { grantLookups } from '../../src/domain-ports';
import { loadGrantFactsMany, policyFacts } from '../../src/grants/facts';
import { startService, type TestService } from '../support/service';
import { connection, human, installAgent, type Human, type InstalledAgent } from '../support/world';
import { grantWorld, podTarget, postGrant, seatTarget, type GrantWorld } from '../support/grant-world';

/**
 * The pod grant list narrows rows in Postgres before the policy sees them (issue 8, §4). The
 * narrowing must never hide a grant the policy would show, and must spare the policy the grants a
 * caller cannot read.
 */
let service: TestService;
let world: GrantWorld;
let seats: InstalledAgent[];
let secondOwner: Human;

beforeAll(async () => {
  service = await startService();
  world = await grantWorld(service);
  // A second connection owner in the pod, so grants come from connections of different members.
  secondOwner = human(service, 'second-owner');
  await service.http
    .post(`/api/pods/${world.podId}/members`)
    .set(world.owner.auth)
    .send({ userId: secondOwner.userId, role: 'member' })
    .expect(201);
  const theirs = await connection(service, secondOwner, world.brokerId);
  seats = [world.bot, world.helper, await installAgent(service, world.owner, world.podId, 'third')];
  for (const seat of seats) {
    await postGrant(service, world, { target: seatTarget(seat) }).expect(201);
    await postGrant(service, world, { target: seatTarget(seat), connectionId: theirs.id }, secondOwner).expect(201);
  }
  await postGrant(service, world, { target: podTarget(world) }).expect(201);
  await postGrant(service, world, { target: podTarget(world), connectionId: theirs.id }, secondOwner).expect(201);
  const revoked = await postGrant(service, world, {}).expect(201);
  await service.http.post(`/api/grants/${revoked.body.id}/revoke`).set(world.owner.auth).expect(200);
});
afterAll(() => service.close());

async function listed(auth: { Authorization: string }): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const res = await service.http
      .get(`/api/pods/${world.podId}/grants`)
      .query({ limit: 2, ...(cursor ? { cursor } : {}) })
      .set(auth)
      .expect(200);
    ids.push(...res.body.items.map((g: { id: string }) => g.id));
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return ids;
}

/** What the policy alone would show: `grants/read` asked about every grant of the pod. */
async function readableByPolicy(caller: { kind: 'human' | 'agent'; id: string }): Promise<string[]> {
  const rows: Array<{ id: string }> = await service.deps
    .db('grants')
    .where('target_pod_id', world.podId)
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
  const members = await service.deps.db('pod_members').where('pod_id', world.podId).pluck('member_id');
  const facts = await loadGrantFactsMany(
    grantLookups,
    service.deps.db,
    rows.map((r) => r.id),
  );
  return rows
    .filter(
      (row) =>
        service.deps.policy.evaluate(decisions.grantsRead, { now_ms: Date.now(), caller, grant: policyFacts(facts.get(row.id)!, members) })
          .allow,
    )
    .map((row) => row.id);
}

describe('the read-scope pre-filter of GET /api/pods/:podId/grants', () => {
  it('shows each caller exactly what the policy alone would show', async () => {
    const callers: Array<[string, { Authorization: string }, { kind: 'human' | 'agent'; id: string }]> = [
      ['connection owner', world.owner.auth, { kind: 'human', id: world.owner.userId }],
      ['another connection owner', secondOwner.auth, { kind: 'human', id: secondOwner.userId }],
      ['plain member', world.member.auth, { kind: 'human', id: world.member.userId }],
      ...seats.map(
        (seat) =>
          [`seat ${seat.name}`, seat.auth, { kind: 'agent' as const, id: seat.agentId }] as [
            string,
            { Authorization: string },
            { kind: 'agent'; id: string },
          ],
      ),
    ];
    for (const [label, auth, caller] of callers) {
      const expected = await readableByPolicy(caller);
      expect({ label, ids: await listed(auth) }).toEqual({ label, ids: expected });
      expect(expected.length).toBeGreaterThan(0);
    }
  });

  it('spares the policy the grants a member cannot read: a handful of decisions among 3 000 seat grants', async () => {
    const seat = seats[2]!;
    const template = await service.deps.db('grants').where({ target_kind: 'seat', target_id: seat.agentId }).first();
    const rows = Array.from({ length: 3000 }, () => {
      const id = newId('grant');
      return { ...template, id, root_id: id, created_at: new Date() };
    });
    for (let i = 0; i < rows.length; i += 500) await service.deps.db('grants').insert(rows.slice(i, i + 500));

    const evaluate = service.deps.policy.evaluate.bind(service.deps.policy);
    let reads = 0;
    const counting = jest.spyOn(service.deps.policy, 'evaluate').mockImplementation((entrypoint, input) => {
      if (entrypoint === decisions.grantsRead) reads += 1;
      return evaluate(entrypoint, input as never);
    });
    try {
      const res = await service.http.get(`/api/pods/${world.podId}/grants?limit=1`).set(world.member.auth).expect(200);
      expect(res.body.items).toHaveLength(1);
      // The member can read the pod grants only: a page of one needs at most a batch of them.
      expect(reads).toBeLessThanOrEqual(50);
    } finally {
      counting.mockRestore();
    }
  });
});
