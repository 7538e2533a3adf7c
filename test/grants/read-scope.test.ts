import { insertCallRecords } from '../../src/trail/repositories/call-record-inserts';
import { newIdAt } from '../../src/kernel/ids';
import { startService, type TestService } from '../support/service';
import { human } from '../support/world';
import { grantWorld, podTarget, postGrant, seatTarget, type GrantWorld } from '../support/grant-world';

/**
 * The read scope of spec §5 rule 3 as a matrix: (owner, human member, installed agent, non-member,
 * other seat, removed member) × (pod grant, seat grant) × (read, list, calls). The seat grant
 * targets `bot`, the "installed agent"; `helper` is the other seat.
 */
let service: TestService;
let world: GrantWorld;
let grants: Record<'pod' | 'seat', string>;
let callers: Record<string, { Authorization: string }>;

async function recordCall(grantId: string, tool: string, at = new Date()): Promise<string> {
  const id = newIdAt('call', at.getTime());
  await insertCallRecords(service.deps.db, [
    {
      id,
      grant_id: grantId,
      root_id: grantId,
      tool,
      principal_kind: 'agent',
      principal_id: world.bot.agentId,
      outcome: 'succeeded',
      reason: 'allowed',
      decision_id: crypto.randomUUID(),
      args_digest: `sha256:${'0'.repeat(64)}`,
      requested_at: at,
      completed_at: at,
      duration_ms: 12,
    },
  ]);
  return id;
}

beforeAll(async () => {
  service = await startService();
  world = await grantWorld(service);
  const removed = human(service, 'removed');
  await service.http
    .post(`/api/pods/${world.podId}/members`)
    .set(world.owner.auth)
    .send({ userId: removed.userId, role: 'member' })
    .expect(201);
  const pod = await postGrant(service, world, { target: podTarget(world) }).expect(201);
  const seat = await postGrant(service, world, { target: seatTarget(world.bot) }).expect(201);
  grants = { pod: pod.body.id, seat: seat.body.id };
  await recordCall(grants.pod, 'repos.read_file');
  await recordCall(grants.seat, 'repos.read_file');
  await service.http.delete(`/api/pods/${world.podId}/members/${removed.userId}`).set(world.owner.auth).expect(204);
  callers = {
    owner: world.owner.auth,
    'human member': world.member.auth,
    'installed agent': world.bot.auth,
    'non-member': world.outsider.auth,
    'other seat': world.helper.auth,
    'removed member': removed.auth,
  };
});
afterAll(() => service.close());

const CAN_READ: Record<string, { pod: boolean; seat: boolean }> = {
  owner: { pod: true, seat: true },
  'human member': { pod: true, seat: false },
  'installed agent': { pod: true, seat: true },
  'non-member': { pod: false, seat: false },
  'other seat': { pod: true, seat: false },
  'removed member': { pod: false, seat: false },
};

describe.each(Object.entries(CAN_READ))('%s', (who, can) => {
  it.each(['pod', 'seat'] as const)('reads a %s grant only within the scope, else 404', async (kind) => {
    const res = await service.http.get(`/api/grants/${grants[kind]}`).set(callers[who]!);
    if (can[kind]) {
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(grants[kind]);
    } else {
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'not_found' });
    }
  });

  it.each(['pod', 'seat'] as const)('reads the calls of a %s grant only within the scope, else 404', async (kind) => {
    const res = await service.http.get(`/api/grants/${grants[kind]}/calls`).set(callers[who]!);
    if (can[kind]) {
      expect(res.status).toBe(200);
      expect(res.body.items).toHaveLength(1);
      expect(res.body.items[0].grantId).toBe(grants[kind]);
    } else {
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'not_found' });
    }
  });

  it('lists exactly the readable grants of the pod; a non-member gets 404', async () => {
    const res = await service.http.get(`/api/pods/${world.podId}/grants`).set(callers[who]!);
    const isMember = !['non-member', 'removed member'].includes(who);
    if (!isMember) {
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'not_found' });
      return;
    }
    expect(res.status).toBe(200);
    const expected = (['seat', 'pod'] as const).filter((kind) => can[kind]).map((kind) => grants[kind]);
    expect(res.body.items.map((g: { id: string }) => g.id)).toEqual(expected);
    expect(res.body.nextCursor).toBeNull();
  });
});

describe('the call trail', () => {
  it('shows the CONTRACT call record fields and never the arguments', async () => {
    const res = await service.http.get(`/api/grants/${grants.pod}/calls`).set(world.owner.auth).expect(200);
    expect(res.body.items[0]).toEqual({
      id: expect.stringMatching(/^call_/),
      grantId: grants.pod,
      tool: 'repos.read_file',
      outcome: 'succeeded',
      reason: 'allowed',
      approvalId: null,
      decisionId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      approvedBy: null,
      principal: { kind: 'agent', id: world.bot.agentId },
      requestedAt: expect.stringMatching(/Z$/),
      completedAt: expect.stringMatching(/Z$/),
      credential: null,
      durationMs: 12,
      argsDigest: `sha256:${'0'.repeat(64)}`,
      // What the record's leaf in the trail's tree holds, beside the record.
      rootId: grants.pod,
      decision: 'allow',
      leafIndex: expect.any(Number),
      outcomeLeafIndex: null,
    });
  });

  it('pages newest first with a cursor', async () => {
    const ids = [];
    const base = Date.now() + 60_000;
    for (const [i, tool] of ['a', 'b', 'c'].entries()) ids.push(await recordCall(grants.seat, tool, new Date(base + i)));
    const first = await service.http.get(`/api/grants/${grants.seat}/calls?limit=2`).set(world.bot.auth).expect(200);
    expect(first.body.items.map((c: { tool: string }) => c.tool)).toEqual(['c', 'b']);
    const second = await service.http
      .get(`/api/grants/${grants.seat}/calls?limit=2&cursor=${first.body.nextCursor}`)
      .set(world.bot.auth)
      .expect(200);
    expect(second.body.items.map((c: { tool: string }) => c.tool)).toEqual(['a', 'repos.read_file']);
    expect(second.body.nextCursor).toBeNull();
  });

  it('refuses a limit outside 1..200 and a forged cursor with 400', async () => {
    for (const query of ['limit=0', 'limit=201', 'limit=x', 'cursor=nope', 'colour=red']) {
      const res = await service.http.get(`/api/grants/${grants.pod}/calls?${query}`).set(world.owner.auth);
      expect({ query, status: res.status, code: res.body.code }).toEqual({ query, status: 400, code: 'invalid_request' });
    }
  });

  it('answers 404 for an unknown grant, to everyone', async () => {
    const res = await service.http.get('/api/grants/grt_01jd0000000000000000000000/calls').set(world.owner.auth);
    expect(res.status).toBe(404);
  });
});
