import { poll } from '../support/events';
import { startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { rootGrant } from '../support/world';
import { callRecord } from '../support/call-records';

/**
 * The approvals' outbox: a check that asks for an approval writes the approval, its call record
 * and one message (approval_messages) in one transaction, and nothing of the webhooks' or the
 * agents' events; the webhooks and the agent's event poll each read the message once, in their
 * own transactions, and a message both have read is deleted by the approvals' sweep.
 */
let service: TestService;
let world: BrokerWorld;
const WRITE = { tool: 'issues.create_comment', args: { issue: 7, body: 'LGTM' } };

beforeAll(async () => {
  service = await startService({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  world = await brokerWorld(service);
});
afterAll(() => service.close());

async function ask() {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    { tools: ['issues.create_comment'], writeMode: 'approve' },
  );
  const res = await checkAs(service, world, grant.id, world.agent, WRITE);
  expect(res.body.decision).toBe('approval_required');
  return res.body as { callId: string; approvalId: string };
}

const messagesOf = (approvalId: string) =>
  service.deps.db('approval_messages').whereRaw("webhook_data->'approval'->>'id' = ?", [approvalId]).orderBy('id');

describe('asking for an approval', () => {
  it('writes the approval, the record and one message, and nothing for webhooks or agents yet', async () => {
    await service.http
      .post(`/api/pods/${world.podId}/webhooks`)
      .set(world.owner.auth)
      .send({ url: 'http://127.0.0.1:9/hook', events: ['approval.requested'] })
      .expect(201);
    const deliveriesBefore = await service.deps.db('webhook_deliveries').count({ n: '*' });
    const asked = await ask();
    expect(await callRecord(service.deps.db, asked.callId)).toMatchObject({ outcome: 'awaiting_approval', approval_id: asked.approvalId });
    const [message, ...more] = await messagesOf(asked.approvalId);
    expect(more).toEqual([]);
    expect(message).toMatchObject({
      type: 'approval.requested',
      pod_id: world.podId,
      agent_ids: [world.agent.agentId],
      agent_data: { approvalId: asked.approvalId, callId: asked.callId, tool: WRITE.tool },
      webhooks_taken_at: null,
      agents_taken_at: null,
    });
    expect(message.webhook_data.approval).not.toHaveProperty('args');
    expect(JSON.stringify(message)).not.toContain('LGTM');
    expect(await service.deps.db('webhook_deliveries').count({ n: '*' })).toEqual(deliveriesBefore);
    expect(await service.deps.db('events').whereRaw("data->>'approvalId' = ?", [asked.approvalId])).toEqual([]);
  });

  it('is read once by the agent’s poll and once by the webhooks, then deleted by the sweep', async () => {
    const asked = await ask();
    const heard = (await poll(service, world.agent)).filter((e) => e.data.approvalId === asked.approvalId);
    expect(heard.map((e) => e.type)).toEqual(['approval.requested']);
    // Read again: the message was taken, so the agent's events do not double.
    await poll(service, world.agent);
    expect(await service.deps.db('events').whereRaw("data->>'approvalId' = ?", [asked.approvalId])).toHaveLength(1);

    await service.deps.webhookDispatcher.deliverDue();
    await service.deps.webhookDispatcher.deliverDue();
    const hooks = await service.deps.db('webhooks').where({ pod_id: world.podId }).pluck('id');
    const deliveries = await service.deps
      .db('webhook_deliveries')
      .whereIn('webhook_id', hooks)
      .whereRaw("payload->'data'->'approval'->>'id' = ?", [asked.approvalId]);
    expect(deliveries).toHaveLength(hooks.length);

    const [message] = await messagesOf(asked.approvalId);
    expect(message.webhooks_taken_at).not.toBeNull();
    expect(message.agents_taken_at).not.toBeNull();
    await service.deps.approvalArgsSweep.run();
    expect(await messagesOf(asked.approvalId)).toEqual([]);
  });

  it('a human’s call: the webhooks hear of it, no agent does', async () => {
    const grant = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'pod', id: world.podId },
      { tools: ['issues.create_comment'], writeMode: 'approve' },
    );
    const res = await checkAs(service, world, grant.id, world.member, WRITE);
    expect(res.body.decision).toBe('approval_required');
    const [message] = await messagesOf(res.body.approvalId as string);
    expect(message).toMatchObject({ agent_ids: [], agent_data: null, webhooks_taken_at: null });
    expect(message.agents_taken_at).not.toBeNull();
  });
});
