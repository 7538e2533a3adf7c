import { emitEvent } from '../../src/events/outbox';
import { deleteAckedEvents } from '../../src/events/delivery';
import { retentionSweepIntervalMs } from '../../src/events/retention';
import { human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';
import { startService, type TestService } from '../support/service';
import { drain, poll } from '../support/events';

let service: TestService;
let owner: Human;
let podId: string;
let agent: InstalledAgent;

beforeAll(async () => {
  service = await startService();
  owner = human(service, 'owner');
  podId = await podWith(service, owner);
  agent = await installAgent(service, owner, podId, 'outbox-bot');
  await service.deps.eventWaker.ensureListening();
});
afterAll(() => service.close());
beforeEach(() => drain(service, agent));

const event = (agentIds: string[]) => ({ type: 'agent.updated' as const, podId, data: { probe: true }, agentIds });

describe('events are written with the change that causes them', () => {
  it('a committed transaction leaves the event and wakes a waiting poll (NOTIFY at commit)', async () => {
    const wakeup = service.deps.eventWaker.subscribe(agent.agentId);
    const started = Date.now();
    await service.deps.db.transaction((trx) => emitEvent(trx, event([agent.agentId, agent.agentId])));
    await wakeup.wait(10_000);
    expect(Date.now() - started).toBeLessThan(2000);
    const events = await poll(service, agent);
    expect(events).toHaveLength(1); // one delivery per recipient, duplicates folded
    expect(events[0]).toMatchObject({ type: 'agent.updated', data: { probe: true } });
  });

  it('a transaction that rolls back leaves no event and sends no notification', async () => {
    const wakeup = service.deps.eventWaker.subscribe(agent.agentId);
    await expect(
      service.deps.db.transaction(async (trx) => {
        await emitEvent(trx, event([agent.agentId]));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const started = Date.now();
    await wakeup.wait(600);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(await poll(service, agent)).toEqual([]);
  });

  it('a refused duplicate install (409) sends no member_added', async () => {
    const name = `dup-${Date.now().toString(36)}`;
    await installAgent(service, owner, podId, name);
    expect((await poll(service, agent)).map((e) => e.data.name)).toEqual([name]);
    const again = await service.http.post(`/api/registry/pods/${podId}/agents`).set(owner.auth).send({ name });
    expect(again.status).toBe(409);
    expect(await poll(service, agent)).toEqual([]);
  });

  it('a refused duplicate member (409) sends no member_added; removal sends member_removed', async () => {
    const bob = human(service, 'bob');
    const add = () => service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: bob.userId, role: 'member' });
    await add().expect(201);
    await add().expect(409);
    await service.http.delete(`/api/pods/${podId}/members/${bob.userId}`).set(owner.auth).expect(204);
    const events = await poll(service, agent);
    expect(events.map((e) => [e.type, e.data.memberId])).toEqual([
      ['pod.member_added', bob.userId],
      ['pod.member_removed', bob.userId],
    ]);
  });

  it('emitting to nobody writes nothing', async () => {
    await service.deps.db.transaction((trx) => emitEvent(trx, event([])));
    expect(await poll(service, agent)).toEqual([]);
  });
});

describe('retention of acknowledged events', () => {
  it('deletes acked events older than the retention, and nothing else', async () => {
    const db = service.deps.db;
    const ids = { oldAcked: '', freshAcked: '', oldPending: '' };
    for (const key of Object.keys(ids) as Array<keyof typeof ids>) {
      await db.transaction((trx) => emitEvent(trx, event([agent.agentId])));
      const [row] = await db('events').where({ agent_id: agent.agentId }).whereNull('acked_at').orderBy('id', 'desc').limit(1);
      ids[key] = row.id;
      if (key === 'oldPending') break;
      await db('events')
        .where({ id: row.id })
        .update({ acked_at: db.raw(key === 'oldAcked' ? "now() - interval '2 hours'" : 'now()') });
    }
    await db('events')
      .where({ id: ids.oldPending })
      .update({ occurred_at: db.raw("now() - interval '3 hours'") });

    expect(await deleteAckedEvents(db, 3_600_000, 1)).toBeGreaterThanOrEqual(1);
    const left = await db('events').whereIn('id', Object.values(ids)).pluck('id');
    expect(left.sort()).toEqual([ids.freshAcked, ids.oldPending].sort());
    // An acked event deleted by retention is gone for the agent too: acking it again is a 404.
    expect((await service.http.post(`/api/agents/runtime/events/${ids.oldAcked}/ack`).set(agent.auth)).status).toBe(404);
  });

  it('sweeps every quarter of the retention, between 15 s and 10 min', () => {
    expect(retentionSweepIntervalMs(60_000)).toBe(15_000);
    expect(retentionSweepIntervalMs(3_600_000)).toBe(600_000);
    expect(retentionSweepIntervalMs(7 * 86_400_000)).toBe(600_000);
    expect(retentionSweepIntervalMs(1_200_000)).toBe(300_000);
  });
});
