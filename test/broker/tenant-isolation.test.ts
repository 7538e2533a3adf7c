import { windowKey } from '../../src/budget/keys';
import { startService, type TestService } from '../support/service';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecordsOf } from '../support/call-records';

/**
 * One broker's bad requests must never fail another broker's checks. Before issue 8, a check whose
 * tool held a NUL reached the batched INSERT of the call trail and made Postgres refuse the whole
 * batch: the other tenant's checks answered 503 and their budget lost units no record showed.
 */
let service: TestService;
let hostile: BrokerWorld;
let victim: BrokerWorld;

beforeAll(async () => {
  service = await startService();
  hostile = await brokerWorld(service);
  victim = await brokerWorld(service);
});
afterAll(() => service.close());

describe('a hostile tenant beside a legitimate one', () => {
  it('floods bad checks while every legitimate concurrent check is allowed and every consumed unit has its record', async () => {
    const bad = await chainOf(service, hostile, 0, { budget: { calls: 1000, windowMs: 3_600_000 } });
    const good = await chainOf(service, victim, 1, { budget: { calls: 1000, windowMs: 3_600_000 } });
    // Interleaved, so that bad and good checks land in the same batches of the call trail.
    const answers = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        i % 2
          ? checkAs(service, victim, good.leafId, victim.agent)
          : checkAs(service, hostile, bad.rootId, hostile.agent, { tool: 'x\u0000' }),
      ),
    );
    const floodAnswers = answers.filter((_, i) => i % 2 === 0);
    const legitAnswers = answers.filter((_, i) => i % 2 === 1);

    const tally = (answers: Array<{ status: number; body: { decision?: string } }>) =>
      answers.reduce<Record<string, number>>((acc, res) => {
        const key = `${res.status} ${res.body.decision ?? ''}`.trim();
        return { ...acc, [key]: (acc[key] ?? 0) + 1 };
      }, {});
    expect(tally(legitAnswers)).toEqual({ '200 allow': 200 });
    expect(tally(floodAnswers)).toEqual({ '400': 200 });

    // Every unit the budget took, at every level of the chain, has its pending call record.
    const records = await callRecordsOf(service.deps.db, good.leafId);
    expect(records).toHaveLength(200);
    for (const grantId of good.ids) {
      const consumed = await service.deps.redis.llen(windowKey(good.rootId, grantId));
      expect(consumed).toBe(records.length);
    }
  });
});
