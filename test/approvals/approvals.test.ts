import { ManualClock } from '../support/clock';
import { drain, poll } from '../support/events';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { broker, rootGrant } from '../support/world';
import { callRecordsOf, uuidOf } from '../support/call-records';

/**
 * CONTRACT §9 through HTTP on the real stack: a write under `approve` waits for a human; the
 * approval allows that very call once (same grant, tool, principal, args) and nothing else.
 */
let service: TestService;
let replica: TestService;
let world: BrokerWorld;
const clock = new ManualClock();
const WRITE = { tool: 'issues.create_comment', args: { issue: 7, body: 'LGTM' } };

beforeAll(async () => {
  service = await startService({}, { clock });
  replica = await startService({}, { clock });
  world = await brokerWorld(service);
});
afterAll(async () => {
  await replica.close();
  await service.close();
});

async function approveModeGrant(): Promise<string> {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' },
  );
  return grant.id;
}

async function askApproval(grantId: string, extra: Record<string, unknown> = {}) {
  const res = await checkAs(service, world, grantId, world.agent, { ...WRITE, ...extra });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    decision: 'approval_required',
    reason: 'approval_required',
    approvalId: expect.stringMatching(/^apr_/),
  });
  return res.body as { callId: string; approvalId: string; budget: { remaining: number }; approval: { id: string; expiresAt: string } };
}

const decide = (approvalId: string, action: 'approve' | 'deny', who = world.owner, body: object = {}) =>
  service.http.post(`/api/approvals/${approvalId}/${action}`).set(who.auth).send(body);

const resend = (grantId: string, approvalId: string, extra: Record<string, unknown> = {}, on: TestService = service) =>
  checkAs(on, world, grantId, world.agent, { ...WRITE, approvalId, ...extra });

describe('a write under approve', () => {
  it('waits for a human: approval_required, no budget taken, the call awaiting, the agent told', async () => {
    await drain(service, world.agent);
    const grantId = await approveModeGrant();
    const read = await checkAs(service, world, grantId, world.agent);
    expect(read.body.decision).toBe('allow');
    const asked = await askApproval(grantId);
    expect(asked.approval.id).toBe(asked.approvalId);
    expect(asked.budget.remaining).toBe(read.body.budget.remaining);
    const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(world.owner.auth);
    expect(calls.body.items[0]).toMatchObject({
      id: asked.callId,
      outcome: 'awaiting_approval',
      approvalId: asked.approvalId,
      approvedBy: null,
    });
    const events = await poll(service, world.agent);
    expect(events.map((e) => e.type)).toContain('approval.requested');
  });

  it('is listed for the deciders only, and approved once it allows that exact call once', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    const pending = await service.http.get('/api/approvals').query({ state: 'pending' }).set(world.owner.auth);
    expect(pending.body.items.map((a: { id: string }) => a.id)).toContain(asked.approvalId);
    const memberList = await service.http.get('/api/approvals').set(world.member.auth);
    expect(memberList.body.items.map((a: { id: string }) => a.id)).not.toContain(asked.approvalId);
    expectProblem(await service.http.get(`/api/approvals/${asked.approvalId}`).set(world.member.auth), 404, 'not_found');
    expectProblem(await decide(asked.approvalId, 'approve', world.member), 404, 'not_found');

    await drain(service, world.agent);
    const approved = await decide(asked.approvalId, 'approve', world.owner, { note: 'ok for issue 7' });
    expect(approved.body).toMatchObject({
      state: 'approved',
      decidedBy: world.owner.userId,
      note: 'ok for issue 7',
      principal: { kind: 'agent' },
    });
    expect((await poll(service, world.agent)).find((e) => e.type === 'approval.decided')?.data).toMatchObject({
      approvalId: asked.approvalId,
      state: 'approved',
    });
    expectProblem(await decide(asked.approvalId, 'deny'), 409, 'approval_already_decided');

    expect((await resend(grantId, asked.approvalId, { args: { issue: 8, body: 'LGTM' } })).body.reason).toBe('approval_mismatch');
    expect((await resend(grantId, asked.approvalId, { tool: 'repos.read_file' })).body.reason).toBe('approval_mismatch');
    const allowed = await resend(grantId, asked.approvalId);
    expect(allowed.body).toMatchObject({ decision: 'allow', reason: 'allowed' });
    expect(allowed.body.budget.remaining).toBe(asked.budget.remaining - 1);
    expect((await resend(grantId, asked.approvalId)).body.reason).toBe('approval_used');
    const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(world.owner.auth);
    expect(calls.body.items.find((c: { id: string }) => c.id === allowed.body.callId)).toMatchObject({
      outcome: 'pending',
      approvalId: asked.approvalId,
      approvedBy: world.owner.userId,
    });
    const metrics = await service.http.get('/metrics');
    expect(metrics.text).toMatch(/approvals_total\{outcome="used"\} [1-9]/);
  });

  it('a denied approval denies the call', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    expect((await decide(asked.approvalId, 'deny')).body.state).toBe('denied');
    expect((await resend(grantId, asked.approvalId)).body.reason).toBe('approval_denied');
  });

  it('a pending approval is pending', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    expect((await resend(grantId, asked.approvalId)).body.reason).toBe('approval_pending');
  });
});

describe('who may not decide', () => {
  it('nobody approves their own call, and an agent credential never decides', async () => {
    const grantId = await approveModeGrant();
    const own = await checkAs(service, world, grantId, world.owner, WRITE);
    expect(own.body.decision).toBe('approval_required');
    expectProblem(await decide(own.body.approvalId, 'approve', world.owner), 403, 'self_approval');
    const asked = await askApproval(grantId);
    const byAgent = await service.http.post(`/api/approvals/${asked.approvalId}/approve`).set(world.agent.auth).send({});
    expect(byAgent.status).toBe(403);
    expect(byAgent.body.code).toBe('credential_not_accepted');
  });
});

describe('an approval does not outlive its grant or its time', () => {
  it('a revoked grant: nothing is decided on its approvals, and an approved one allows nothing', async () => {
    const grantId = await approveModeGrant();
    const first = await askApproval(grantId);
    // Another call (an identical one would find the first approval, CONTRACT §17).
    const other = { args: { ...WRITE.args, body: 'another' } };
    const second = await askApproval(grantId, other);
    await decide(second.approvalId, 'approve').expect(200);
    await service.http.post(`/api/grants/${grantId}/revoke`).set(world.owner.auth).expect(200);
    expectProblem(await decide(first.approvalId, 'approve'), 422, 'grant_not_usable');
    expect((await resend(grantId, second.approvalId, other)).body.reason).toBe('revoked');
  });

  it('a stopped runtime: an approved call is still denied', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    await decide(asked.approvalId, 'approve').expect(200);
    const runtime = `/api/registry/pods/${world.podId}/agents/${world.agent.name}`;
    await service.http.post(`${runtime}/runtime-stop`).set(world.owner.auth).expect(200);
    try {
      expect((await resend(grantId, asked.approvalId)).body.reason).toBe('runtime_stopped');
    } finally {
      await service.http.post(`${runtime}/runtime-start`).set(world.owner.auth).expect(200);
    }
    // Running again, the approval (unused, unexpired) still allows the call once.
    expect((await resend(grantId, asked.approvalId)).body.decision).toBe('allow');
  });

  it('expires by the clock: too late to decide, too late to use', async () => {
    const grantId = await approveModeGrant();
    const pending = await askApproval(grantId);
    const other = { args: { ...WRITE.args, body: 'another' } };
    const approved = await askApproval(grantId, other);
    await decide(approved.approvalId, 'approve').expect(200);
    clock.advance(15 * 60_000 + 1);
    try {
      expectProblem(await decide(pending.approvalId, 'approve'), 409, 'approval_expired');
      expect((await resend(grantId, approved.approvalId, other)).body.reason).toBe('approval_expired');
      const listed = await service.http.get('/api/approvals').query({ state: 'expired' }).set(world.owner.auth);
      expect(listed.body.items.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining([pending.approvalId, approved.approvalId]));
    } finally {
      clock.advance(-(15 * 60_000 + 1));
    }
  });
});

describe('an approval on a grant that expires first', () => {
  it('expires with the grant, not APPROVAL_TTL_MS later, and the agent is told so', async () => {
    const grantExpiresAt = new Date(clock.now() + 5 * 60_000).toISOString();
    const { id: grantId } = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'pod', id: world.podId },
      { tools: ['issues.create_comment'], writeMode: 'approve', expiresAt: grantExpiresAt },
    );
    await drain(service, world.agent);
    const asked = await askApproval(grantId);
    expect(asked.approval.expiresAt).toBe(grantExpiresAt);
    const read = await service.http.get(`/api/approvals/${asked.approvalId}`).set(world.owner.auth).expect(200);
    expect(read.body).toMatchObject({ state: 'pending', expiresAt: grantExpiresAt });
    const requested = (await poll(service, world.agent)).find((e) => e.type === 'approval.requested');
    expect(requested?.data).toMatchObject({ approvalId: asked.approvalId, expiresAt: grantExpiresAt });
    clock.advance(5 * 60_000);
    try {
      // Past the grant's expiry, well within the TTL: no longer pending, and nothing to decide on.
      const after = await service.http.get(`/api/approvals/${asked.approvalId}`).set(world.owner.auth).expect(200);
      expect(after.body.state).toBe('expired');
      expectProblem(await decide(asked.approvalId, 'approve'), 422, 'grant_not_usable');
    } finally {
      clock.advance(-5 * 60_000);
    }
  });

  it('a grant that outlives the TTL keeps the TTL', async () => {
    const asked = await askApproval(await approveModeGrant());
    expect(Date.parse(asked.approval.expiresAt)).toBe(clock.now() + 15 * 60_000);
  });
});

describe('concurrent re-sends', () => {
  it('allow exactly once across two replicas', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    await decide(asked.approvalId, 'approve').expect(200);
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => resend(grantId, asked.approvalId, {}, i % 2 === 0 ? service : replica)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.decision === 'allow')).toHaveLength(1);
    expect(answers.filter((a) => a.body.reason === 'approval_used')).toHaveLength(99);
    const allowedRecords = (await callRecordsOf(service.deps.db, grantId)).filter((r) => r.outcome === 'pending');
    expect(allowedRecords).toHaveLength(1);
  });
});

describe('the broker waits on an approval', () => {
  it('long-polls until a human decides; another broker learns nothing', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    // supertest sends on then(): both requests are started explicitly.
    const waiting = service.http
      .get(`/api/broker/approvals/${asked.approvalId}`)
      .query({ waitMs: 5000 })
      .set(world.broker.auth)
      .then((res) => res);
    const pendingAtFirst = await service.http.get(`/api/broker/approvals/${asked.approvalId}`).set(world.broker.auth);
    expect(pendingAtFirst.body.state).toBe('pending');
    setTimeout(() => void decide(asked.approvalId, 'approve').then(() => undefined), 300);
    const started = Date.now();
    const res = await waiting;
    expect(res.body.state).toBe('approved');
    expect(Date.now() - started).toBeLessThan(4000);
    const stranger = await broker(service, 'stranger-broker');
    expectProblem(await service.http.get(`/api/broker/approvals/${asked.approvalId}`).set(stranger.auth), 404, 'not_found');
  });
});

describe('the approval and the call record are one unit of work', () => {
  // A trigger that refuses this test's call records, as a full disk or a lost connection would.
  const REFUSING = `refuse_records_${process.pid}`;
  // DDL on call_records takes its partitions' locks beside the service's own background passes
  // (partitions made ahead, tallies): Postgres may pick this statement as a deadlock's victim.
  async function ddl(sql: string) {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await service.deps.db.raw(sql);
      } catch (error) {
        if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error;
      }
    }
  }
  async function refuseRecordsOf(grantId: string) {
    await service.deps.db.raw(`create or replace function ${REFUSING}() returns trigger language plpgsql as $$
      begin if new.grant_id = '${uuidOf('grant', grantId)}'::uuid then raise exception 'record refused'; end if; return new; end $$`);
    await ddl(`create trigger ${REFUSING} before insert on call_records for each row execute function ${REFUSING}()`);
  }
  afterEach(async () => {
    await ddl(`drop trigger if exists ${REFUSING} on call_records`);
    await service.deps.db.raw(`drop function if exists ${REFUSING}()`);
  });

  it('asking: a record that cannot be written leaves no pending approval and no event behind its 503', async () => {
    await drain(service, world.agent);
    const grantId = await approveModeGrant();
    await refuseRecordsOf(grantId);
    const res = await checkAs(service, world, grantId, world.agent, WRITE);
    expectProblem(res, 503, 'dependency_unavailable');
    expect(await service.deps.db('approvals').where({ grant_id: grantId })).toEqual([]);
    expect((await poll(service, world.agent)).map((e) => e.type)).not.toContain('approval.requested');
  });

  it('using: a record that cannot be written leaves the approval approved and its unit untaken', async () => {
    const grantId = await approveModeGrant();
    const asked = await askApproval(grantId);
    await decide(asked.approvalId, 'approve').expect(200);
    await refuseRecordsOf(grantId);
    expectProblem(await resend(grantId, asked.approvalId), 503, 'dependency_unavailable');
    expect(await service.deps.db('approvals').where({ id: asked.approvalId }).first()).toMatchObject({ state: 'approved' });
    await ddl(`drop trigger ${REFUSING} on call_records`);
    const again = await resend(grantId, asked.approvalId);
    expect(again.body).toMatchObject({ decision: 'allow', budget: { remaining: asked.budget.remaining - 1 } });
  });
});
