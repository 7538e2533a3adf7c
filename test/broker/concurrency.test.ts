import { startService, type TestService } from '../support/service';
import { attenuateGrant } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecordsOf } from '../support/call-records';

let a: TestService;
let b: TestService;
let world: BrokerWorld;

// Two replicas of the service, one database, one Redis: the budget is decided in Redis alone.
beforeAll(async () => {
  a = await startService();
  b = await startService();
  world = await brokerWorld(a);
});
afterAll(async () => {
  await a.close();
  await b.close();
});

async function outcomes(grantId: string) {
  const rows = await callRecordsOf(a.deps.db, grantId);
  const count = (outcome: string) => rows.filter((r) => r.outcome === outcome).length;
  return { pending: count('pending'), denied: count('denied'), total: rows.length };
}

describe('exact budgets under concurrency', () => {
  it('allows exactly 50 of 500 concurrent checks through two replicas', async () => {
    const { leafId } = await chainOf(a, world, 1, { budget: { calls: 50, windowMs: 3_600_000 } });
    const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => checkAs(i % 2 ? a : b, world, leafId, world.agent)));
    expect(answers.filter((r) => r.status !== 200).map((r) => ({ status: r.status, code: r.body.code }))).toEqual([]);
    const allowed = answers.filter((r) => r.body.decision === 'allow');
    expect(allowed).toHaveLength(50);
    expect(answers.filter((r) => r.body.reason === 'budget_exhausted')).toHaveLength(450);
    expect(await outcomes(leafId)).toEqual({ pending: 50, denied: 450, total: 500 });
  });

  it('charges the parent too: two children of a parent with 5 calls allow 5 between them', async () => {
    const { rootId } = await chainOf(a, world, 0, { budget: { calls: 5, windowMs: 3_600_000 } });
    const left = await attenuateGrant(a, world.agent, rootId);
    const right = await attenuateGrant(a, world.agent, rootId);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => checkAs(i % 2 ? a : b, world, i % 4 < 2 ? left.id : right.id, world.agent)),
    );
    expect(answers.filter((r) => r.body.decision === 'allow')).toHaveLength(5);
    // The parent's own calls share the same five: none is left.
    expect((await checkAs(a, world, rootId, world.agent)).body.reason).toBe('budget_exhausted');
  });

  it('slides: a unit comes back once its call leaves the window', async () => {
    const { rootId } = await chainOf(a, world, 0, { budget: { calls: 2, windowMs: 600 } });
    expect((await checkAs(a, world, rootId, world.agent)).body.decision).toBe('allow');
    expect((await checkAs(b, world, rootId, world.agent)).body.decision).toBe('allow');
    const denied = await checkAs(a, world, rootId, world.agent);
    expect(denied.body.reason).toBe('budget_exhausted');
    await new Promise((r) => setTimeout(r, denied.body.retryAfterMs + 30));
    expect((await checkAs(b, world, rootId, world.agent)).body.decision).toBe('allow');
  });
});
