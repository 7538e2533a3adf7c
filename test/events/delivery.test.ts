import { human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';
import { ManualClock } from '../support/clock';
import { startService, type TestService } from '../support/service';
import { drain, poll, sleep } from '../support/events';

// Leases end when the clock says: the redelivery tests move it past the visibility timeout.
const clock = new ManualClock();
let service: TestService;
let owner: Human;
let podId: string;
let agent: InstalledAgent;

beforeAll(async () => {
  service = await startService({ EVENT_VISIBILITY_TIMEOUT_MS: '1000' }, { clock });
  owner = human(service, 'owner');
  podId = await podWith(service, owner);
  agent = await installAgent(service, owner, podId, 'events-bot');
});
afterAll(() => service.close());
beforeEach(() => drain(service, agent));

/** Adds a human member: each addition sends `pod.member_added` to the pod's agents. */
async function addMember(label = 'member'): Promise<string> {
  const who = human(service, label);
  await service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: who.userId, role: 'member' }).expect(201);
  return who.userId;
}

const ack = (id: string, as: InstalledAgent = agent) => service.http.post(`/api/agents/runtime/events/${id}/ack`).set(as.auth);

describe('event polling (at-least-once)', () => {
  it('returns events oldest first in the documented shape, with deliveryCount 1', async () => {
    const first = await addMember('first');
    const second = await addMember('second');
    const events = await poll(service, agent);
    expect(events.map((e) => e.data.memberId)).toEqual([first, second]);
    expect(events[0]).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'pod.member_added',
      podId,
      occurredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      deliveryCount: 1,
      data: { podId, memberId: first, kind: 'human', role: 'member' },
    });
  });

  it('honours limit and refuses limits and waits out of range', async () => {
    for (let i = 0; i < 3; i += 1) await addMember();
    expect(await poll(service, agent, { limit: 2 })).toHaveLength(2);
    expect(await poll(service, agent, { limit: 2 })).toHaveLength(1);
    for (const query of [{ limit: 0 }, { limit: 101 }, { limit: 'x' }, { waitMs: 20001 }, { waitMs: -1 }, { cursor: 'a' }]) {
      const res = await service.http.get('/api/agents/runtime/events').query(query).set(agent.auth);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
  });

  it('leases what it returns, and redelivers an unacked event after the lease with deliveryCount + 1', async () => {
    await addMember();
    const [first] = await poll(service, agent);
    expect(first?.deliveryCount).toBe(1);
    expect(await poll(service, agent)).toEqual([]);
    clock.advance(1100);
    const [again] = await poll(service, agent);
    expect(again).toMatchObject({ id: first?.id, deliveryCount: 2 });
    await ack(again!.id).expect(204);
    clock.advance(1100);
    expect(await poll(service, agent)).toEqual([]);
  });

  it('never hands the same event to two concurrent polls under a live lease', async () => {
    for (let i = 0; i < 12; i += 1) await addMember();
    const batches = await Promise.all(Array.from({ length: 6 }, () => poll(service, agent, { limit: 4 })));
    const ids = batches.flat().map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const rest = await poll(service, agent, { limit: 100 });
    expect(new Set([...ids, ...rest.map((e) => e.id)]).size).toBe(12);
  });

  it('acks idempotently and hides other agents\u2019 events and unknown ids (404)', async () => {
    const other = await installAgent(service, owner, podId, `other-${Date.now().toString(36)}`);
    const [memberAdded] = await poll(service, agent);
    expect(memberAdded?.data.memberId).toBe(other.agentId);
    await ack(memberAdded!.id).expect(204);
    await ack(memberAdded!.id).expect(204);
    const foreign = await ack(memberAdded!.id, other);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    expect((await ack('evt_01jd0000000000000000000000')).status).toBe(404);
    expect((await ack('not-an-id')).status).toBe(404);
  });

  it('refuses a body on ack, and credentials that are not an agent token', async () => {
    await addMember();
    const [event] = await poll(service, agent);
    await ack(event!.id).send({ note: 'x' }).expect(400);
    const asHuman = await service.http.post(`/api/agents/runtime/events/${event!.id}/ack`).set(owner.auth);
    expect(asHuman.status).toBe(403);
    expect(asHuman.body.code).toBe('credential_not_accepted');
    expect((await service.http.get('/api/agents/runtime/events')).status).toBe(401);
  });
});

describe('long polling', () => {
  it('returns as soon as an event arrives, well before waitMs', async () => {
    const started = Date.now();
    const polling = poll(service, agent, { waitMs: 10_000 });
    await sleep(200);
    const memberId = await addMember('late');
    const events = await polling;
    expect(events.map((e) => e.data.memberId)).toEqual([memberId]);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('waits out waitMs when nothing arrives, and returns nothing', async () => {
    const started = Date.now();
    expect(await poll(service, agent, { waitMs: 1200 })).toEqual([]);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1150);
    expect(elapsed).toBeLessThan(4000);
  });

  it('finds an event whose lease expired while it waited (the timed re-check, no NOTIFY)', async () => {
    await addMember();
    const [leased] = await poll(service, agent);
    const started = Date.now();
    const waiting = poll(service, agent, { waitMs: 5000 });
    // The lease ends while the poll waits; nothing is committed, so no NOTIFY wakes it.
    clock.advance(1100);
    const [again] = await waiting;
    expect(again).toMatchObject({ id: leased?.id, deliveryCount: 2 });
    expect(Date.now() - started).toBeLessThan(4000);
  });
});
