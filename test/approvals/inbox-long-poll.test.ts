import { randomBytes } from 'node:crypto';
import { metricValue } from '../support/decision-collector';
import { ownDatabase } from '../support/own-database';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { rootGrant } from '../support/world';

/**
 * GET /api/approvals?waitMs: the deciders' inbox as a long poll. It answers as soon as an
 * approval the caller may decide is requested, on any replica (two services on one database,
 * each with its own LISTEN connection), times out empty, refuses hostile waits, and never wakes
 * for another tenant's approval.
 */
let service: TestService;
let replica: TestService;
let world: BrokerWorld;
let stranger: BrokerWorld;
const KEY = randomBytes(32).toString('base64');
// A database of its own: services sealing with a key of their own make (and drop) the OAuth signing
// keys other files' services in the run's database sign and verify with (src/oauth/signing-keys.ts).
const database = ownDatabase('inbox_long_poll');

beforeAll(async () => {
  await database.migrated();
  service = await startService({ DATABASE_URL: database.url, APPROVAL_ARGS_KEY: KEY });
  replica = await startService({ DATABASE_URL: database.url, APPROVAL_ARGS_KEY: KEY });
  world = await brokerWorld(service);
  stranger = await brokerWorld(service);
});
afterAll(async () => {
  await replica?.close();
  await service?.close();
  await database.drop();
});

async function requestApproval(on: TestService, of: BrokerWorld): Promise<string> {
  const grant = await rootGrant(
    on,
    of.owner,
    of.connectionId,
    { kind: 'pod', id: of.podId },
    { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' },
  );
  const res = await checkAs(on, of, grant.id, of.agent, { tool: 'issues.create_comment', args: { body: 'hello' } });
  expect(res.body).toMatchObject({ decision: 'approval_required' });
  return res.body.approvalId as string;
}

/** Asks `test` every 50 ms until it holds, for at most 5 s. */
async function expectSoon(test: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error('did not happen within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const inbox = (of: BrokerWorld, query: Record<string, string | number>) =>
  service.http
    .get('/api/approvals')
    .query({ state: 'pending', ...query })
    .set(of.owner.auth);

describe('the inbox long poll', () => {
  it('answers as soon as an approval is requested on another replica', async () => {
    const since = new Date().toISOString();
    const started = Date.now();
    const waiting = inbox(world, { waitMs: 20_000, requestedAfter: since }).then((res) => res);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const id = await requestApproval(replica, world);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.items.map((item: { id: string }) => item.id)).toEqual([id]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('times out empty after waitMs when nothing newer is requested', async () => {
    const started = Date.now();
    const res = await inbox(world, { waitMs: 1500, requestedAfter: new Date().toISOString() }).expect(200);
    expect(res.body.items).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
  });

  it("is neither woken nor shown another tenant's approval", async () => {
    const started = Date.now();
    const waiting = inbox(world, { waitMs: 2000, requestedAfter: new Date().toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const theirs = await requestApproval(replica, stranger);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    // The stranger's owner does see it: it exists, it is only not ours.
    const own = await inbox(stranger, {}).expect(200);
    expect(own.body.items.map((item: { id: string }) => item.id)).toContain(theirs);
  });

  it('stops waiting when the client goes away', async () => {
    const waiting = async () => metricValue((await service.http.get('/metrics').expect(200)).text, 'approvals_inbox_waiting') ?? 0;
    const gone = new AbortController();
    const url = `${service.baseUrl}/api/approvals?state=pending&waitMs=20000&requestedAfter=${encodeURIComponent(new Date().toISOString())}`;
    const poll = fetch(url, { headers: world.owner.auth, signal: gone.signal }).catch((error: Error) => error.name);
    await expectSoon(async () => (await waiting()) === 1);
    gone.abort();
    expect(await poll).toBe('AbortError');
    await expectSoon(async () => (await waiting()) === 0);
  });

  it.each(['-1', '1e999', '25001', '99999999999999999999', '1.5', 'NaN'])('refuses waitMs=%s with 400', async (waitMs) => {
    const res = await inbox(world, { waitMs });
    expectProblem(res, 400, 'invalid_request');
  });

  it('refuses a requestedAfter that is no instant with 400', async () => {
    expectProblem(await inbox(world, { requestedAfter: 'yesterday\u0000' }), 400, 'invalid_request');
  });
});
