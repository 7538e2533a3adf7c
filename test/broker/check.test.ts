import { digestOf } from '../../src/kernel/digest';
import { decisionsWritten, startedServiceWith, startService } from '../support/service';
import { broker, human } from '../support/world';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { callRecord, callRecordsOf } from '../support/call-records';

const { service, world } = startedServiceWith(brokerWorld);

describe('POST /api/broker/check', () => {
  it('allows a usable call through a chain, records it pending, and takes one outcome', async () => {
    const { leafId } = await chainOf(service, world, 2, { budget: { calls: 10, windowMs: 60_000 } });
    const res = await checkAs(service, world, leafId, world.agent, { args: { path: 'src/a.ts', ref: 'main' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      decision: 'allow',
      callId: expect.stringMatching(/^call_/),
      reason: 'allowed',
      budget: { remaining: 9, resetMs: 60_000 },
      receipt: { leafIndex: expect.any(Number) },
      grantVersion: expect.any(String),
    });

    const record = await callRecord(service.deps.db, res.body.callId);
    expect(record).toMatchObject({
      grant_id: leafId,
      outcome: 'pending',
      reason: 'allowed',
      principal_kind: 'agent',
      principal_id: world.agent.agentId,
    });
    expect(record.args_digest).toBe(digestOf({ ref: 'main', path: 'src/a.ts' }));
    // decisionId names the policy decision that allowed the call, as logged in the decision log;
    // no approval concerns it.
    expect(record.approval_id).toBeNull();
    await decisionsWritten();
    const logged = service.logs.map((line) => JSON.parse(line)).filter((line) => line.path === 'broker/check/decision');
    expect(logged.map((line) => line.decision_id)).toContain(record.decision_id);

    const outcome = `/api/broker/calls/${res.body.callId}/outcome`;
    const done = await service.http.post(outcome).set(world.broker.auth).send({ outcome: 'succeeded', durationMs: 12 });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      id: res.body.callId,
      grantId: leafId,
      outcome: 'succeeded',
      durationMs: 12,
      argsDigest: record.args_digest,
    });
    expect(done.body.completedAt).toEqual(expect.any(String));
    const again = await service.http.post(outcome).set(world.broker.auth).send({ outcome: 'failed' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('outcome_already_recorded');
  });

  it('lets a human member call with a forwarded JWT', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const res = await checkAs(service, world, rootId, world.member);
    expect(res.body).toMatchObject({ decision: 'allow' });
    const record = await callRecord(service.deps.db, res.body.callId);
    expect(record).toMatchObject({ principal_kind: 'user', principal_id: world.member.userId });
  });

  it('answers 404 for an unknown grant and for another broker’s grant, and records nothing', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const unknown = await checkAs(service, world, 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', world.agent);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const other = await broker(service, 'other-broker');
    const foreign = await checkAs(service, { broker: other }, rootId, world.agent);
    expect(foreign.status).toBe(404);
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
    const outcome = await service.http
      .post('/api/broker/calls/call_01jd6x3c4vf8r9t2y5u7w0z1ab/outcome')
      .set(world.broker.auth)
      .send({ outcome: 'succeeded' });
    expect(outcome.status).toBe(404);
  });

  it('refuses an invalid subject token (401) and an asserted principal (403) without recording', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const bad = await checkAs(service, world, rootId, { ...world.agent, token: 'art_nope' });
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('subject_token_invalid');
    const brokerAsSubject = await checkAs(service, world, rootId, { ...world.agent, token: world.broker.token });
    expect(brokerAsSubject.body.code).toBe('subject_token_invalid');
    const asserted = await service.http
      .post('/api/broker/check')
      .set(world.broker.auth)
      .send({ grantId: rootId, tool: 'repos.read_file', principal: { kind: 'agent', id: world.agent.agentId }, args: {} });
    expect(asserted.status).toBe(403);
    expect(asserted.body.code).toBe('principal_assertion_refused');
    const both = await checkAs(service, world, rootId, world.agent, { principal: { kind: 'agent', id: world.agent.agentId } });
    expect(both.status).toBe(400);
  });

  it('refuses a missing, wrong-kind or unknown broker credential', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const body = { grantId: rootId, tool: 'repos.read_file', subjectToken: world.agent.token, args: {} };
    expect((await service.http.post('/api/broker/check').send(body)).status).toBe(401);
    expect((await service.http.post('/api/broker/check').set(world.owner.auth).send(body)).status).toBe(403);
    const forged = await service.http
      .post('/api/broker/check')
      .set('Authorization', `Bearer bkt_${'A'.repeat(46)}`)
      .send(body);
    expect(forged.status).toBe(401);
  });

  it('accepts an asserted principal only where the deployment trusts its brokers', async () => {
    const trusting = await startService({ BROKER_TRUST_ASSERTED_PRINCIPAL: 'true' });
    try {
      const { rootId } = await chainOf(trusting, world, 0);
      const res = await trusting.http
        .post('/api/broker/check')
        .set(world.broker.auth)
        .send({ grantId: rootId, tool: 'repos.read_file', principal: { kind: 'user', id: world.member.userId }, args: {} });
      expect(res.body).toMatchObject({ decision: 'allow' });
      const outsider = human(trusting, 'outsider');
      const denied = await trusting.http
        .post('/api/broker/check')
        .set(world.broker.auth)
        .send({ grantId: rootId, tool: 'repos.read_file', principal: { kind: 'user', id: outsider.userId }, args: {} });
      expect(denied.body).toMatchObject({ decision: 'deny', reason: 'principal_not_in_audience' });
    } finally {
      await trusting.close();
    }
  });

  it('lets a denied call take no outcome', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const denied = await checkAs(service, world, rootId, world.agent, { tool: 'issues.create_comment' });
    expect(denied.body).toMatchObject({ decision: 'deny', reason: 'tool_not_allowed' });
    const record = await callRecord(service.deps.db, denied.body.callId);
    expect(record).toMatchObject({ outcome: 'denied', approval_id: null });
    const res = await service.http
      .post(`/api/broker/calls/${denied.body.callId}/outcome`)
      .set(world.broker.auth)
      .send({ outcome: 'succeeded' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('call_denied');
  });
});
