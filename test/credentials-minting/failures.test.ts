import { expectProblem } from '../support/problems';
import { human, podWith } from '../support/world';
import { appConnection, appGrant, checkWithCredential, credentialWorld, type CredentialWorld } from './world';

/**
 * When GitHub refuses, hangs, answers too much or answers amiss, the check answers 503
 * `credential_unavailable` and never an allow: the call is recorded as denied with that reason,
 * no budget unit is taken (the broker must not make the call), and the next check works again.
 */
let world: CredentialWorld;
let grantId: string;

beforeAll(async () => {
  world = await credentialWorld();
  const res = await appConnection(world, world.alice);
  grantId = (await appGrant(world, res.body.id as string, { budget: { calls: 5, windowMs: 3_600_000 } })).id;
});
afterAll(() => world.close());
afterEach(() => {
  world.github.mode = { kind: 'normal' };
});

async function remainingBudget(): Promise<number> {
  // A check without a credential only to read the budget would take a unit; the trail tells instead.
  const res = await world.service.http.get(`/api/grants/${grantId}/calls`).query({ limit: 100 }).set(world.alice.auth);
  const taken = (res.body.items as Array<{ outcome: string }>).filter((item) => ['pending', 'succeeded', 'failed'].includes(item.outcome));
  return 5 - taken.length;
}

async function lastRecord() {
  const res = await world.service.http.get(`/api/grants/${grantId}/calls`).query({ limit: 1 }).set(world.alice.auth);
  return res.body.items[0] as { id: string; outcome: string; reason: string; credential: unknown };
}

describe.each([
  ['refuses with 422', { kind: 'refuse', status: 422 } as const, 'acme/api', /refused the token request \(422\)/],
  ['refuses with 403', { kind: 'refuse', status: 403 } as const, 'acme/web', /refused the token request \(403\)/],
  ['never answers', { kind: 'hang' } as const, 'acme/api', /no answer within 1000 ms/],
  ['declares far too many bytes', { kind: 'huge', bytes: 1024 * 1024 } as const, 'acme/web', /larger than 65536 bytes/],
  ['streams far too many bytes', { kind: 'huge', bytes: 1024 * 1024, streamed: true } as const, 'acme/api', /larger than 65536 bytes/],
])('GitHub %s', (_label, mode, repository, detail) => {
  it('answers 503 credential_unavailable, records the call as denied and takes no unit', async () => {
    // A fresh clock hour: nothing of an earlier test's tokens is reused.
    world.clock.advance(60 * 60_000);
    const before = await remainingBudget();
    const requests = world.github.requests;
    world.github.mode = mode;
    const started = Date.now();
    const res = await checkWithCredential(world, grantId, { repository, path: 'x' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expectProblem(res, 503, 'credential_unavailable');
    expect(res.body.detail).toMatch(detail);
    expect(JSON.stringify(res.body)).not.toMatch(/ghs_|eyJ/); // no token, no app JWT
    expect(world.github.requests).toBe(requests + 1);
    expect(await lastRecord()).toMatchObject({ outcome: 'denied', reason: 'credential_unavailable', credential: null });
    expect(await remainingBudget()).toBe(before);

    world.github.mode = { kind: 'normal' };
    const retry = await checkWithCredential(world, grantId, { repository, path: 'x' });
    expect(retry.body).toMatchObject({ decision: 'allow', budget: { remaining: before - 1 } });
    expect(retry.body.credential.repositories).toEqual([repository]);
  });
});

describe('GitHub answering amiss', () => {
  it('a repository the installation does not reach: GitHub refuses (422), so does the check (503)', async () => {
    const res = await checkWithCredential(world, grantId, { repository: 'acme/not-installed', path: 'x' });
    expectProblem(res, 503, 'credential_unavailable');
  });

  it("another owner's repository of the same name never gets the installation's token for its namesake", async () => {
    // The request names a repository by name only; the answer names acme/api, not other-org/api.
    const issued = world.github.issued.length;
    const res = await checkWithCredential(world, grantId, { repository: 'other-org/api', path: 'x' });
    expectProblem(res, 503, 'credential_unavailable');
    expect(res.body.detail).toMatch(/does not match/);
    expect(world.github.issued.length).toBe(issued + 1);
    expect(JSON.stringify(res.body)).not.toContain(world.github.issued.at(-1)!.token);
  });
});

describe('a check that asks for a credential it cannot have', () => {
  it('on a connection without an app: 422, before any budget or GitHub request', async () => {
    const plain = await world.service.http
      .post('/api/connections')
      .set(world.alice.auth)
      .send({
        kind: 'code_hosting_app',
        brokerId: world.broker.id,
        externalInstallationId: 'anything',
        tools: [{ name: 'repos.read_file', access: 'read' }],
      });
    const grant = await world.service.http
      .post('/api/grants')
      .set(world.alice.auth)
      .send({ connectionId: plain.body.id, target: { kind: 'pod', id: world.podId }, tools: ['repos.read_file'] });
    const requests = world.github.requests;
    const res = await checkWithCredential(world, grant.body.id as string, { repository: 'acme/api' });
    expectProblem(res, 422, 'credential_unavailable');
    expect(world.github.requests).toBe(requests);
    const trail = await world.service.http.get(`/api/grants/${grant.body.id}/calls`).set(world.alice.auth);
    expect(trail.body.items).toEqual([]);
  });
});

describe('a call a human approved', () => {
  it('keeps its approval when GitHub fails, and uses it once the credential can be had', async () => {
    const bob = human(world.service, 'bob');
    const podId = await podWith(world.service, world.alice, [{ who: bob, role: 'admin' }]);
    const connection = await appConnection(world, world.alice);
    const grant = await world.service.http
      .post('/api/grants')
      .set(world.alice.auth)
      .send({
        connectionId: connection.body.id,
        target: { kind: 'pod', id: podId },
        tools: ['issues.create_comment'],
        writeMode: 'approve',
      });
    expect(grant.status).toBe(201);
    const args = { repository: 'acme/api', body: 'ship it' };
    const call = { tool: 'issues.create_comment' };
    const asked = await checkWithCredential(world, grant.body.id as string, args, call);
    expect(asked.body).toMatchObject({ decision: 'approval_required' });
    expect(asked.body.credential).toBeUndefined();
    const approvalId = asked.body.approvalId as string;
    expect((await world.service.http.post(`/api/approvals/${approvalId}/approve`).set(bob.auth).send({})).status).toBe(200);

    // No token for issues on acme/api is cached yet in this world: the re-sent check asks GitHub.
    world.github.mode = { kind: 'refuse', status: 403 };
    const failed = await checkWithCredential(world, grant.body.id as string, args, { ...call, approvalId });
    expectProblem(failed, 503, 'credential_unavailable');
    const still = await world.service.http.get(`/api/approvals/${approvalId}`).set(bob.auth);
    expect(still.body.state).toBe('approved');

    world.github.mode = { kind: 'normal' };
    const allowed = await checkWithCredential(world, grant.body.id as string, args, { ...call, approvalId });
    expect(allowed.body).toMatchObject({ decision: 'allow' });
    expect(allowed.body.credential).toMatchObject({ repositories: ['acme/api'], permissions: { issues: 'write' } });
    const used = await world.service.http.get(`/api/approvals/${approvalId}`).set(bob.auth);
    expect(used.body.state).toBe('used');
    const again = await checkWithCredential(world, grant.body.id as string, args, { ...call, approvalId });
    expect(again.body).toMatchObject({ decision: 'deny', reason: 'approval_used' });
    expect(again.body.credential).toBeUndefined();
  });
});
