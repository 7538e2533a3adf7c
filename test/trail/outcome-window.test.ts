import { startedServiceWith } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { callRecord } from '../support/call-records';
import { ManualClock } from '../support/clock';

/**
 * The trail keeps a completion as milliseconds after the check (a 4-byte integer), so an outcome
 * is taken for 24 days after its check and refused after: the service's clock is moved, not slept.
 */
const DAY = 86_400_000;
const clock = new ManualClock();
const { service, world } = startedServiceWith(brokerWorld, () => ({ clock }));

async function allowedCall(): Promise<{ callId: string; checkedAt: number }> {
  const { rootId } = await chainOf(service, world, 0);
  const checkedAt = clock.now();
  const res = await checkAs(service, world, rootId, world.agent);
  expect(res.body).toMatchObject({ decision: 'allow' });
  return { callId: res.body.callId, checkedAt };
}

const report = (callId: string, body: object) => service.http.post(`/api/broker/calls/${callId}/outcome`).set(world.broker.auth).send(body);

describe('an outcome reported long after its check', () => {
  it('is taken 24 days after the check, at the millisecond the service took it', async () => {
    const { callId, checkedAt } = await allowedCall();
    clock.advance(24 * DAY - 1234);
    const res = await report(callId, { outcome: 'failed', durationMs: 86_400_000, errorCode: 'upstream:timeout' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'failed', durationMs: 86_400_000 });
    expect(res.body.completedAt).toBe(new Date(checkedAt + 24 * DAY - 1234).toISOString());
    expect(Date.parse(res.body.requestedAt)).toBe(checkedAt);
    const stored = await callRecord(service.deps.db, callId);
    expect(stored).toMatchObject({ completed_at: new Date(checkedAt + 24 * DAY - 1234), error_code: 'upstream:timeout' });
  });

  it('is refused a millisecond past 24 days (409 outcome_too_late), and the record stays pending', async () => {
    const { callId } = await allowedCall();
    clock.advance(24 * DAY + 1);
    const res = await report(callId, { outcome: 'succeeded' });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'outcome_too_late' });
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await callRecord(service.deps.db, callId)).toMatchObject({ outcome: 'pending', completed_at: null, duration_ms: null });
  });

  it('tells another broker nothing of a late call (404), as of any call', async () => {
    const { callId } = await allowedCall();
    clock.advance(30 * DAY);
    const other = await broker(service, 'other-broker');
    const res = await service.http.post(`/api/broker/calls/${callId}/outcome`).set(other.auth).send({ outcome: 'succeeded' });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });
});
