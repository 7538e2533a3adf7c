import { createHash } from 'node:crypto';
import { expectProblem } from '../support/problems';
import { decisionsWritten } from '../support/service';
import { human } from '../support/world';
import { appConnection, appGrant, checkWithCredential, credentialWorld, type CredentialWorld } from './world';

/**
 * Credentials minted per call: on allow, a check with `credential: true` answers with an
 * installation token GitHub minted for exactly the call's repository and the tool's permissions,
 * reused while more than 5 minutes of it remain and never logged, stored or put in a decision event.
 */
let world: CredentialWorld;
let grantId: string;

beforeAll(async () => {
  world = await credentialWorld();
  const res = await appConnection(world, world.alice);
  expect(res.status).toBe(201);
  grantId = (await appGrant(world, res.body.id as string)).id;
});
afterAll(() => world.close());

/** github_installation_tokens_total by result, from /metrics (one registry per process: compare deltas). */
async function tokenCounts(): Promise<{ reused: number; minted: number; failed: number }> {
  const text = (await world.service.http.get('/metrics')).text;
  const counts = { reused: 0, minted: 0, failed: 0 };
  for (const match of text.matchAll(/^github_installation_tokens_total\{result="(reused|minted|failed)"\} (\d+)$/gm)) {
    counts[match[1] as keyof typeof counts] = Number(match[2]);
  }
  return counts;
}

const fingerprint = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;

describe('a credential for the call', () => {
  it("is minted for exactly the repository and permissions, through a request that meets GitHub's contract", async () => {
    const before = world.github.requests;
    const res = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'README.md' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ decision: 'allow', reason: 'allowed' });
    const issued = world.github.issued.at(-1)!;
    expect(world.github.requests).toBe(before + 1);
    expect(world.github.rejected).toEqual([]);
    expect(issued).toEqual({
      installationId: world.installations.acme,
      body: { repositories: ['api'], permissions: { contents: 'read' } },
      token: issued.token,
    });
    expect(res.body.credential).toEqual({
      token: issued.token,
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      repositories: ['acme/api'],
      permissions: { contents: 'read', metadata: 'read' },
    });
    expect(Date.parse(res.body.credential.expiresAt as string) - Date.now()).toBeGreaterThan(55 * 60_000);
  });

  it('is reused while more than 5 minutes remain, by the service clock, and minted again past that', async () => {
    const counted = await tokenCounts();
    const first = await checkWithCredential(world, grantId, { repository: 'acme/web', path: 'a.md' });
    const requests = world.github.requests;
    world.clock.advance(54 * 60_000);
    const again = await checkWithCredential(world, grantId, { repository: 'acme/web', path: 'b.md' });
    expect(again.body.credential.token).toBe(first.body.credential.token);
    expect(world.github.requests).toBe(requests);
    world.clock.advance(2 * 60_000);
    const renewed = await checkWithCredential(world, grantId, { repository: 'acme/web', path: 'c.md' });
    expect(renewed.body).toMatchObject({ decision: 'allow' });
    expect(renewed.body.credential.token).not.toBe(first.body.credential.token);
    expect(world.github.requests).toBe(requests + 1);
    expect(world.github.rejected).toEqual([]);
    const now = await tokenCounts();
    expect({ minted: now.minted - counted.minted, reused: now.reused - counted.reused }).toEqual({ minted: 2, reused: 1 });
  });

  it('is one token per repository and per permission set: another repository or tool is another request', async () => {
    const a = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'x' });
    const requests = world.github.requests;
    const comment = await checkWithCredential(world, grantId, { repository: 'acme/api' }, { tool: 'issues.create_comment' });
    expect(comment.body.credential.permissions).toEqual({ issues: 'write', metadata: 'read' });
    expect(comment.body.credential.token).not.toBe(a.body.credential.token);
    expect(world.github.issued.at(-1)!.body).toEqual({ repositories: ['api'], permissions: { issues: 'write' } });
    expect(world.github.requests).toBe(requests + 1);
  });

  it('is one request for concurrent checks that need the same token', async () => {
    world.clock.advance(60 * 60_000);
    const requests = world.github.requests;
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => checkWithCredential(world, grantId, { repository: 'acme/web', path: `concurrent-${i}` })),
    );
    expect(new Set(answers.map((res) => res.body.credential?.token)).size).toBe(1);
    expect(answers.every((res) => res.body.decision === 'allow')).toBe(true);
    expect(world.github.requests).toBe(requests + 1);
  });

  it('is never given for a denied call, and the call takes no credential request', async () => {
    const narrow = await appGrant(world, (await connectionId()) as string, { resources: { repositories: ['acme/api'] } });
    const requests = world.github.requests;
    const res = await checkWithCredential(world, narrow.id, { repository: 'acme/web', path: 'x' });
    expect(res.body.decision).toBe('deny');
    expect(res.body.credential).toBeUndefined();
    expect(world.github.requests).toBe(requests);
  });

  it('leaves a fingerprint on the call record, and the trail finds every call that received the token', async () => {
    const one = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'one' });
    const two = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'two' });
    const other = await checkWithCredential(world, grantId, { repository: 'acme/web', path: 'other' });
    const without = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'plain' }, { credential: false });
    expect(without.body).toMatchObject({ decision: 'allow' });
    expect(without.body.credential).toBeUndefined();
    const token = one.body.credential.token as string;
    expect(two.body.credential.token).toBe(token);
    const res = await world.service.http
      .get(`/api/grants/${grantId}/calls`)
      .query({ credential: fingerprint(token), limit: 100 })
      .set(world.alice.auth);
    expect(res.status).toBe(200);
    const ids = (res.body.items as Array<{ id: string; credential: unknown }>).map((item) => item.id);
    expect(ids).toEqual(expect.arrayContaining([one.body.callId, two.body.callId]));
    expect(ids).not.toContain(other.body.callId);
    expect(ids).not.toContain(without.body.callId);
    for (const item of res.body.items)
      expect(item.credential).toEqual({ fingerprint: fingerprint(token), expiresAt: one.body.credential.expiresAt });
    const all = await world.service.http.get(`/api/grants/${grantId}/calls`).query({ limit: 100 }).set(world.alice.auth);
    const plain = (all.body.items as Array<{ credential: unknown }>).filter((item) => item.credential === null);
    expect(plain.length).toBeGreaterThan(0);
  });

  it('refuses a fingerprint that is not one (400), and finds nothing for an unknown one', async () => {
    for (const bad of ['sha256:XYZ', 'sha256:00', `sha256:${'0'.repeat(64)}`, 'md5:0011223344556677', 'sha256:0011223344556677\u0000']) {
      const res = await world.service.http.get(`/api/grants/${grantId}/calls`).query({ credential: bad }).set(world.alice.auth);
      expectProblem(res, 400, 'invalid_request');
    }
    const none = await world.service.http
      .get(`/api/grants/${grantId}/calls`)
      .query({ credential: 'sha256:0011223344556677' })
      .set(world.alice.auth);
    expect(none.body.items).toEqual([]);
  });

  it('is never logged, stored or put in a decision event', async () => {
    const checks = () => world.service.logs.filter((line) => line.includes('"path":"broker/check/decision"')).length;
    await decisionsWritten();
    const before = checks();
    const res = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'secret-check' });
    const tokens = world.github.issued.map((issued) => issued.token);
    expect(tokens).toContain(res.body.credential.token);
    await decisionsWritten();
    expect(checks()).toBe(before + 1); // the check's decision event is among the logs searched
    const logs = world.service.logs.join('\n');
    const keyLine = world.github.privateKeyPem.split('\n')[1]!;
    expect(tokens.filter((token) => logs.includes(token))).toEqual([]);
    expect(logs.includes(keyLine)).toBe(false);
    const { db } = world.service.deps;
    const tables = await db('pg_tables').where({ schemaname: 'public' }).pluck('tablename');
    expect(tables).toContain('call_records');
    for (const table of tables as string[]) {
      const rows = await db.raw<{ rows: Array<{ text: string }> }>('select t::text as text from ?? t', [table]);
      const text = rows.rows.map((row) => row.text).join('\n');
      expect({ table, leaked: tokens.filter((token) => text.includes(token)), key: text.includes(keyLine) }).toEqual({
        table,
        leaked: [],
        key: false,
      });
    }
  });
});

let madeConnectionId: string | undefined;
async function connectionId() {
  madeConnectionId ??= (await appConnection(world, world.alice)).body.id as string;
  return madeConnectionId;
}

describe('who gets a credential', () => {
  it('no one who typed another installation id: no connection, so no token', async () => {
    const mallory = human(world.service, 'mallory');
    const requests = world.github.requests;
    // alice's installation, and another org's that nobody bound.
    for (const externalInstallationId of [world.installations.acme, world.installations.otherOrg]) {
      const res = await appConnection(world, mallory, { externalInstallationId });
      expectProblem(res, 422, 'installation_not_bound');
    }
    // Not even alice may connect an installation the operator did not bind to her.
    expectProblem(
      await appConnection(world, world.alice, { externalInstallationId: world.installations.otherOrg }),
      422,
      'installation_not_bound',
    );
    // The same id on a connection without the app gets a connection, and that connection no token.
    const plain = await world.service.http
      .post('/api/connections')
      .set(mallory.auth)
      .send({
        kind: 'code_hosting_app',
        brokerId: world.broker.id,
        externalInstallationId: world.installations.acme,
        tools: [{ name: 'repos.read_file', access: 'read', resource: { repository: '/repository' }, permissions: { contents: 'read' } }],
      });
    expect(plain.status).toBe(201);
    const malloryPod = await (await import('../support/world')).podWith(world.service, mallory);
    const grant = await world.service.http
      .post('/api/grants')
      .set(mallory.auth)
      .send({ connectionId: plain.body.id, target: { kind: 'pod', id: malloryPod }, tools: ['repos.read_file'] });
    expect(grant.status).toBe(201);
    const check = await world.service.http
      .post('/api/broker/check')
      .set(world.broker.auth)
      .send({
        grantId: grant.body.id,
        tool: 'repos.read_file',
        subjectToken: mallory.token,
        args: { repository: 'acme/api' },
        credential: true,
      });
    expectProblem(check, 422, 'credential_unavailable');
    expect(world.github.requests).toBe(requests);
    expect(world.github.issued.every((issued) => issued.installationId === world.installations.acme)).toBe(true);
  });

  it('refuses an app that is not configured (422 unknown_app)', async () => {
    expectProblem(await appConnection(world, world.alice, { app: 'nope' }), 422, 'unknown_app');
  });

  it('another broker asking about the grant learns nothing (404) and mints nothing', async () => {
    const { broker } = await import('../support/world');
    const stranger = await broker(world.service, 'stranger');
    const requests = world.github.requests;
    const res = await world.service.http
      .post('/api/broker/check')
      .set(stranger.auth)
      .send({ grantId, tool: 'repos.read_file', subjectToken: world.alice.token, args: { repository: 'acme/api' }, credential: true });
    expectProblem(res, 404, 'not_found');
    expect(world.github.requests).toBe(requests);
  });

  it('a tool without permissions, or a call without a repository, gets none (422)', async () => {
    expectProblem(await checkWithCredential(world, grantId, {}, { tool: 'repos.list' }), 422, 'credential_unavailable');
    const requests = world.github.requests;
    const outcomes: string[] = [];
    for (const repository of [undefined, 'acme', '../acme/api', 'acme/..', 'acme/api/extra', 42, 'acme/api\u0000']) {
      const res = await checkWithCredential(world, grantId, { repository, path: 'x' });
      // The policy may deny a non-canonical value first (resource_invalid); it never gets a token.
      expect(res.body.credential).toBeUndefined();
      if (res.status === 200) expect(res.body).toMatchObject({ decision: 'deny', reason: 'resource_invalid' });
      else if (res.status === 400)
        expectProblem(res, 400, 'invalid_request'); // NUL: refused with the body
      else expectProblem(res, 422, 'credential_unavailable');
      outcomes.push(String(res.status));
    }
    expect(outcomes).toContain('422');
    expect(world.github.requests).toBe(requests);
  });
});
