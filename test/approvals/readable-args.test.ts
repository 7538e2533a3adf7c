import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { ManualClock } from '../support/clock';
import { drain, poll } from '../support/events';
import { ownDatabase } from '../support/own-database';
import { expectProblem } from '../support/problems';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { human, podWith, rootGrant, type Human } from '../support/world';

/**
 * A pending approval keeps its call's arguments for the humans who decide it: sealed at rest,
 * shown to its deciders only, erased in the statement that ends `pending`, and never written to a
 * log, an event or a decision log.
 */
let service: TestService;
let world: BrokerWorld;
let admin: Human;
const clock = new ManualClock();
const KEY = randomBytes(32).toString('base64');
const marker = () => `marker-${randomBytes(8).toString('hex')}`;
// A database of its own: services sealing with keys of their own make (and drop) the OAuth signing
// keys other files' services in the run's database sign and verify with (src/oauth/signing-keys.ts).
const database = ownDatabase('readable_args');
const DATABASE_URL = database.url;

beforeAll(async () => {
  await database.migrated();
  service = await startService({ DATABASE_URL, APPROVAL_ARGS_KEY: KEY, DECISION_LOG: 'all' }, { clock });
  world = await brokerWorld(service);
  admin = human(service, 'admin');
  await service.http
    .post(`/api/pods/${world.podId}/members`)
    .set(world.owner.auth)
    .send({ userId: admin.userId, role: 'admin' })
    .expect(201);
});
afterAll(async () => {
  await service?.close();
  await database.drop();
});

async function approveModeGrant(on: TestService = service): Promise<string> {
  const grant = await rootGrant(
    on,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    {
      tools: ['repos.read_file', 'issues.create_comment'],
      writeMode: 'approve',
    },
  );
  return grant.id;
}

async function ask(grantId: string, args: Record<string, unknown>, on: TestService = service) {
  const res = await checkAs(on, world, grantId, world.agent, { tool: 'issues.create_comment', args });
  expect(res.body).toMatchObject({ decision: 'approval_required' });
  return res.body.approvalId as string;
}

const getAs = (who: Human, id: string, on: TestService = service) => on.http.get(`/api/approvals/${id}`).set(who.auth);
const listAs = async (who: Human) =>
  (await service.http.get('/api/approvals').query({ limit: 200 }).set(who.auth).expect(200)).body.items as Array<Record<string, unknown>>;
const row = (id: string) => service.deps.db('approvals').where({ id }).first();

describe('the deciders read the arguments', () => {
  it('the connection owner and a pod admin read them exactly, unmasked by default, in the list and alone', async () => {
    const args = { issue: 7, body: `<img src=x onerror=alert(1)> ${marker()}`, nested: { list: [1, 'two', null] } };
    const id = await ask(await approveModeGrant(), args);
    for (const decider of [world.owner, admin]) {
      const one = await getAs(decider, id).expect(200);
      expect(one.body).toMatchObject({ state: 'pending', args, argsTooLarge: false, argsUnreadable: false });
      expect((await listAs(decider)).find((a) => a.id === id)).toMatchObject({ args });
    }
  });

  it('the row holds ciphertext bound to the approval, not the text', async () => {
    const secret = marker();
    const id = await ask(await approveModeGrant(), { body: secret });
    const stored = await row(id);
    expect(stored.args_sealed).toBeInstanceOf(Buffer);
    expect(stored.args_sealed.includes(Buffer.from(secret))).toBe(false);
    expect(stored.args_key_id).toMatch(/^[0-9a-f]{16}$/);
    // Moved to another pending approval, the ciphertext does not open there: unreadable, not shown.
    const other = await ask(await approveModeGrant(), { body: 'other' });
    await service.deps.db('approvals').where({ id: other }).update({ args_sealed: stored.args_sealed, args_key_id: stored.args_key_id });
    expect((await getAs(world.owner, other).expect(200)).body).toMatchObject({ args: null, argsUnreadable: true });
  });
});

describe('nobody else reads them', () => {
  it('a hostile tenant, a member who may not decide, the call’s own principal, the agent and the broker', async () => {
    const secret = marker();
    const grantId = await approveModeGrant();
    const id = await ask(grantId, { body: secret });

    const stranger = human(service, 'stranger');
    await podWith(service, stranger);
    expectProblem(await getAs(stranger, id), 404, 'not_found');
    expect((await listAs(stranger)).map((a) => a.id)).not.toContain(id);

    expectProblem(await getAs(world.member, id), 404, 'not_found');
    expect((await listAs(world.member)).map((a) => a.id)).not.toContain(id);

    const agentRead = await service.http.get(`/api/approvals/${id}`).set(world.agent.auth);
    expectProblem(agentRead, 403, 'credential_not_accepted');
    expect(JSON.stringify(agentRead.body)).not.toContain(secret);
    expectProblem(await service.http.get('/api/approvals').set(world.agent.auth), 403, 'credential_not_accepted');

    const brokerView = await service.http.get(`/api/broker/approvals/${id}`).set(world.broker.auth).expect(200);
    expect(brokerView.body).not.toHaveProperty('args');
    expect(JSON.stringify(brokerView.body)).not.toContain(secret);

    // The owner's own call: they read its approval, but never decide it, so never its arguments.
    const own = await checkAs(service, world, grantId, world.owner, { tool: 'issues.create_comment', args: { body: secret } });
    const ownRead = await getAs(world.owner, own.body.approvalId).expect(200);
    expect(ownRead.body).not.toHaveProperty('args');
    expect(JSON.stringify(ownRead.body)).not.toContain(secret);
  });

  it('nothing of them in the logs, the decision logs or the agent’s events', async () => {
    await drain(service, world.agent);
    const secret = marker();
    const id = await ask(await approveModeGrant(), { body: secret });
    await getAs(world.owner, id).expect(200);
    await service.http.post(`/api/approvals/${id}/approve`).set(world.owner.auth).send({}).expect(200);
    await decisionsWritten();
    expect(service.logs.some((line) => line.includes('"decision"'))).toBe(true);
    expect(service.logs.filter((line) => line.includes(secret))).toEqual([]);
    const events = await poll(service, world.agent);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['approval.requested', 'approval.decided']));
    expect(JSON.stringify(events)).not.toContain(secret);
  });
});

describe('erased the moment the approval leaves pending', () => {
  it('approved, denied, used: the row holds no ciphertext, the deciders read null', async () => {
    const grantId = await approveModeGrant();
    const approved = await ask(grantId, { body: marker() });
    const denied = await ask(grantId, { body: marker() });
    const answer = await service.http.post(`/api/approvals/${approved}/approve`).set(world.owner.auth).send({}).expect(200);
    expect(answer.body).toMatchObject({ state: 'approved', args: null });
    await service.http.post(`/api/approvals/${denied}/deny`).set(admin.auth).send({}).expect(200);
    for (const id of [approved, denied]) {
      expect(await row(id)).toMatchObject({ args_sealed: null, args_key_id: null });
      expect((await getAs(world.owner, id).expect(200)).body).toMatchObject({ args: null, argsUnreadable: false });
    }
    // Used: the approved call re-sent with the same arguments runs once; nothing comes back.
    const used = await ask(grantId, { body: 'used' });
    await service.http.post(`/api/approvals/${used}/approve`).set(world.owner.auth).send({}).expect(200);
    const resent = await checkAs(service, world, grantId, world.agent, {
      tool: 'issues.create_comment',
      args: { body: 'used' },
      approvalId: used,
    });
    expect(resent.body.decision).toBe('allow');
    expect(await row(used)).toMatchObject({ state: 'used', args_sealed: null, args_key_id: null });
  });

  it('expired by the clock: erased when read, and by the sweep when nobody reads it', async () => {
    const grantId = await approveModeGrant();
    const read = await ask(grantId, { body: marker() });
    const unread = await ask(grantId, { body: marker() });
    clock.advance(15 * 60_000 + 1);
    try {
      expect((await getAs(world.owner, read).expect(200)).body).toMatchObject({ state: 'expired', args: null });
      expect(await row(read)).toMatchObject({ args_sealed: null, args_key_id: null });
      expect((await row(unread)).args_sealed).not.toBeNull();
      await service.deps.approvalArgsSweep.run();
      expect(await row(unread)).toMatchObject({ args_sealed: null, args_key_id: null });
    } finally {
      clock.advance(-(15 * 60_000 + 1));
    }
  });

  it('its grant revoked', async () => {
    const grantId = await approveModeGrant();
    const id = await ask(grantId, { body: marker() });
    await service.http.post(`/api/grants/${grantId}/revoke`).set(world.owner.auth).expect(200);
    expect(await row(id)).toMatchObject({ args_sealed: null, args_key_id: null });
    expect((await getAs(world.owner, id).expect(200)).body).toMatchObject({ args: null });
  });
});

describe('too large to keep', () => {
  it('over 64 KiB of canonical JSON: not kept, argsTooLarge', async () => {
    // 1e9 is 3 bytes in the body and 10 in canonical JSON: a body under 64 KiB, args well over.
    const body = `{"grantId":"GRANT","tool":"issues.create_comment","subjectToken":"TOKEN","args":{"n":[${Array(15_000).fill('1e9').join(',')}]}}`;
    const grantId = await approveModeGrant();
    const res = await service.http
      .post('/api/broker/check')
      .set(world.broker.auth)
      .set('Content-Type', 'application/json')
      .send(body.replace('GRANT', grantId).replace('TOKEN', world.agent.token));
    expect(res.body).toMatchObject({ decision: 'approval_required' });
    const id = res.body.approvalId as string;
    expect(await row(id)).toMatchObject({ args_sealed: null, args_too_large: true });
    expect((await getAs(world.owner, id).expect(200)).body).toMatchObject({ state: 'pending', args: null, argsTooLarge: true });
  });
});

describe('key rotation', () => {
  it('an old key kept in APPROVAL_ARGS_PREVIOUS_KEYS still opens; gone, the arguments read as unreadable', async () => {
    const args = { body: marker() };
    const id = await ask(await approveModeGrant(), args);
    const rotated = await startService(
      { DATABASE_URL, APPROVAL_ARGS_KEY: randomBytes(32).toString('base64'), APPROVAL_ARGS_PREVIOUS_KEYS: KEY },
      { clock },
    );
    const forgot = await startService({ DATABASE_URL, APPROVAL_ARGS_KEY: randomBytes(32).toString('base64') }, { clock });
    try {
      expect((await getAs(world.owner, id, rotated).expect(200)).body).toMatchObject({ args, argsUnreadable: false });
      const unreadable = await getAs(world.owner, id, forgot).expect(200);
      expect(unreadable.body).toMatchObject({ state: 'pending', args: null, argsUnreadable: true });
      expect(JSON.stringify(unreadable.body)).not.toContain(args.body);
      // What the rotated service seals now, it seals under its own key.
      const fresh = await ask(await approveModeGrant(rotated), { body: 'new' }, rotated);
      expect((await row(fresh)).args_key_id).not.toBe((await row(id)).args_key_id);
      expect((await getAs(world.owner, fresh, rotated).expect(200)).body.args).toEqual({ body: 'new' });
    } finally {
      await rotated.close();
      await forgot.close();
    }
  });

  it('production requires a key of its own; a key that is not 32 bytes of base64 stops the service at start', async () => {
    const production = {
      NODE_ENV: 'production',
      JWT_SECRET: 'x'.repeat(40),
      POLICY_BUNDLE_PATH: 'b.tar.gz',
      POLICY_BUNDLE_SECRET: 'y'.repeat(40),
      TRAIL_SIGNING_KEY: process.env.TRAIL_SIGNING_KEY,
    };
    expect(() => loadConfig(production)).toThrow(/APPROVAL_ARGS_KEY: production seals/);
    expect(loadConfig({ ...production, APPROVAL_ARGS_KEY: KEY }).APPROVAL_ARGS_KEY).toBe(KEY);
    await expect(startService({ DATABASE_URL, APPROVAL_ARGS_KEY: 'c2hvcnQ=' })).rejects.toThrow(/APPROVAL_ARGS_KEY/);
    await expect(startService({ DATABASE_URL, APPROVAL_ARGS_PREVIOUS_KEYS: `${KEY},nope` })).rejects.toThrow(/APPROVAL_ARGS_PREVIOUS_KEYS/);
  });
});
