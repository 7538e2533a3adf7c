import { emitEvent } from '../../src/events/outbox';
import { human, installAgent, podWith, type InstalledAgent } from '../support/world';
import { startService, type TestService } from '../support/service';
import { drain, poll, sleep } from '../support/events';

let service: TestService;
let podId: string;
let agent: InstalledAgent;

beforeAll(async () => {
  service = await startService();
  const owner = human(service, 'owner');
  podId = await podWith(service, owner);
  agent = await installAgent(service, owner, podId, 'waker-bot');
});
afterAll(() => service.close());
beforeEach(() => drain(service, agent));

const emit = () =>
  service.deps.db.transaction((trx) => emitEvent(trx, { type: 'agent.updated', podId, data: {}, agentIds: [agent.agentId] }));

describe('the shared LISTEN connection', () => {
  it('keeps a notification that arrives between subscribing and waiting', async () => {
    await service.deps.eventWaker.ensureListening();
    const wakeup = service.deps.eventWaker.subscribe(agent.agentId);
    await emit();
    await sleep(100);
    const started = Date.now();
    await wakeup.wait(5000);
    expect(Date.now() - started).toBeLessThan(100);
  });

  it('is one connection for every waiting poll', async () => {
    await service.deps.eventWaker.ensureListening();
    const pid = service.deps.eventWaker.backendPid as number;
    expect(pid).toEqual(expect.any(Number));
    const polls = Array.from({ length: 3 }, () => service.http.get('/api/agents/runtime/events').query({ waitMs: 300 }).set(agent.auth));
    await Promise.all(polls);
    expect(service.deps.eventWaker.backendPid).toBe(pid);
    const listeners = await service.deps.db.raw(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'grant-broker-events' and pid = ?",
      [pid],
    );
    expect(listeners.rows[0].n).toBe(1);
  });

  it('a dropped connection costs latency, not events, and comes back', async () => {
    await service.deps.eventWaker.ensureListening();
    const pid = service.deps.eventWaker.backendPid as number;
    expect(pid).toEqual(expect.any(Number));
    await service.deps.db.raw('select pg_terminate_backend(?)', [pid]);
    await sleep(100);
    expect(service.deps.eventWaker.listening).toBe(false);
    // The next long poll (or the reconnect timer) brings a new listener up; the event arrives.
    const started = Date.now();
    const polling = poll(service, agent, { waitMs: 5000 });
    await sleep(100);
    await emit();
    expect(await polling).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(service.deps.eventWaker.listening).toBe(true);
    expect(service.deps.eventWaker.backendPid).not.toBe(pid);
  });

  it('reconnects by itself after a drop, without waiting for a poll', async () => {
    await service.deps.eventWaker.ensureListening();
    const pid = service.deps.eventWaker.backendPid as number;
    expect(pid).toEqual(expect.any(Number));
    await service.deps.db.raw('select pg_terminate_backend(?)', [pid]);
    for (let i = 0; i < 30 && service.deps.eventWaker.backendPid === pid; i += 1) await sleep(100);
    for (let i = 0; i < 30 && !service.deps.eventWaker.listening; i += 1) await sleep(100);
    expect(service.deps.eventWaker.listening).toBe(true);
    expect(service.deps.eventWaker.backendPid).not.toBe(pid);
  });
});
