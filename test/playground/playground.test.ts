import { rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { buildBundle, scratchDir } from '../support/policy-bundles';
import { expectProblem } from '../support/problems';
import { bearer, humanToken, newUserId, startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith, rootGrant, type Human, type InstalledAgent } from '../support/world';

/**
 * The policy playground through HTTP: security admins (a pod's owner or admin, or a person in
 * SECURITY_ADMINS) try a recent check against the serving policy and a candidate bundle with the
 * repository allowlist enforced; nothing is charged or recorded; everybody else gets 404; an
 * upload is bounded in bytes.
 */
const TOOLS = [{ name: 'repos.read_file', access: 'read', resource: { repository: '/repository' } }];
const MAX_BUNDLE_BYTES = 2 * 1024 * 1024;

let service: TestService;
let dir: string;
let candidate: Buffer;
let owner: Human;
let member: Human;
let named: Human;
let agent: InstalledAgent;
let grantId: string;
let brokerAuth: { Authorization: string };

beforeAll(async () => {
  dir = scratchDir('playground-');
  candidate = buildBundle(dir, 'allowlist', {
    ORG_POLICY_MODES: 'broker.check.repository_allowlist=enforce',
    POLICY_REVISION: 'candidate-1',
  });
  const lead = newUserId('lead');
  service = await startService({ SECURITY_ADMINS: ` ${lead} , other `, POLICY_BUNDLE_MAX_BYTES: String(MAX_BUNDLE_BYTES) });
  const token = humanToken(service.config, lead);
  named = { userId: lead, token, auth: bearer(token) };
  owner = human(service, 'owner');
  member = human(service, 'member');
  const podId = await podWith(service, owner, [{ who: member }]);
  agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  brokerAuth = brk.auth;
  const conn = await connection(service, owner, brk.id, { tools: TOOLS });
  grantId = (
    await rootGrant(
      service,
      owner,
      conn.id,
      { kind: 'pod', id: podId },
      { tools: ['repos.read_file'], budget: { calls: 5, windowMs: 3_600_000 } },
    )
  ).id;
}, 120_000);
afterAll(async () => {
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

const check = (repository: string) =>
  service.http
    .post('/api/broker/check')
    .set(brokerAuth)
    .send({ grantId, tool: 'repos.read_file', subjectToken: agent.token, args: { repository, path: 'README.md' } });

const tryIt = (who: Human, input: unknown, bundle?: Buffer) => {
  const req = service.http.post('/api/policy/playground').set(who.auth).field('input', JSON.stringify(input));
  return bundle ? req.attach('bundle', bundle, 'candidate.tar.gz') : req;
};

/** What a check leaves behind: its records and the budget it took. */
async function traces() {
  const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(owner.auth).expect(200);
  const usage = await service.http.get(`/api/grants/${grantId}/usage`).set(owner.auth).expect(200);
  return { records: calls.body.items.length, used: usage.body.used };
}

/** The newest recent check of this grant, once the decision log has written it. */
async function recentOf(who: Human) {
  for (let i = 0; i < 40; i += 1) {
    const res = await service.http.get('/api/policy/playground/recent').set(who.auth).expect(200);
    const found = res.body.items.find((item: { grantId: string }) => item.grantId === grantId);
    if (found) return found as { decisionId: string; tool: string; allow: boolean; reason: string; input: Record<string, unknown> };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no recent check of the grant');
}

describe('the policy playground', () => {
  it('tries a recent check against the serving policy and a candidate, side by side, charging and recording nothing', async () => {
    expect((await check('evil/api')).body.decision).toBe('allow');
    const recent = await recentOf(owner);
    expect(recent).toMatchObject({ tool: 'repos.read_file', allow: true, reason: 'allowed' });
    expect(recent.input.args).toBe('**REDACTED**');
    const before = await traces();

    const res = await tryIt(owner, recent.input, candidate).expect(200);
    expect(res.body.serving).toMatchObject({ allow: true, reason: 'allowed', revision: service.deps.policy.revision });
    expect(res.body.candidate).toMatchObject({
      revision: 'candidate-1',
      allow: false,
      reason: 'repository_not_allowlisted',
      orgDenials: [{ package: 'org.broker.check.repository_allowlist', reason: 'repository_not_allowlisted' }],
      explanation: { rule: 'org.broker.check.repository_allowlist' },
    });
    expect(res.body).toMatchObject({ same: false, argsMasked: true });
    // The same input on an allowlisted repository: both allow.
    const allowed = { ...recent.input, resource: { repository: 'acme/api' } };
    const both = await tryIt(owner, allowed, candidate).expect(200);
    expect(both.body).toMatchObject({ same: true, serving: { allow: true }, candidate: { allow: true } });
    // No budget charged, no record written: the trail and the windows are as they were.
    expect(await traces()).toEqual(before);
    // Nor is the trial a decision anything logged.
    expect((await recentOf(owner)).decisionId).toBe(recent.decisionId);
  });

  it('without a bundle answers for the serving policy alone', async () => {
    const recent = await recentOf(owner);
    const res = await tryIt(named, recent.input).expect(200);
    expect(res.body).toMatchObject({ candidate: null, same: true, serving: { allow: true } });
  });

  it('is for security admins: a plain member, an agent and a broker get 404', async () => {
    const recent = await recentOf(owner);
    expectProblem(await tryIt(member, recent.input), 404, 'not_found');
    expectProblem(await service.http.get('/api/policy/playground/recent').set(member.auth), 404, 'not_found');
    expectProblem(await service.http.get('/api/policy/playground/recent').set(agent.auth), 404, 'not_found');
    expectProblem(await service.http.get('/api/policy/playground/recent').set(brokerAuth), 404, 'not_found');
  });

  it('bounds an upload in bytes, and refuses what is not a bundle or not a form, with a 4xx problem', async () => {
    const recent = await recentOf(owner);
    expectProblem(await tryIt(owner, recent.input, Buffer.alloc(MAX_BUNDLE_BYTES + 1)), 413, 'payload_too_large');
    // A gzip bomb: a few kilobytes that inflate past four times the bound.
    expectProblem(await tryIt(owner, recent.input, gzipSync(Buffer.alloc(4 * MAX_BUNDLE_BYTES + 1024))), 413, 'payload_too_large');
    expectProblem(await tryIt(owner, recent.input, Buffer.from('not a bundle')), 400, 'invalid_request');
    expectProblem(await tryIt(owner, '{"nested":'.repeat(10)), 400, 'invalid_request');
    const notJson = await service.http.post('/api/policy/playground').set(owner.auth).field('input', '{"a": [[[[');
    expectProblem(notJson, 400, 'invalid_request');
    const deep = await service.http.post('/api/policy/playground').set(owner.auth).field('input', '['.repeat(60_000));
    expectProblem(deep, 400, 'invalid_request');
    const extra = await service.http.post('/api/policy/playground').set(owner.auth).field('input', '{}').field('other', 'x');
    expectProblem(extra, 400, 'invalid_request');
    const json = await service.http.post('/api/policy/playground').set(owner.auth).send({ input: recent.input });
    expectProblem(json, 415, 'unsupported_media_type');
    const big = await service.http
      .post('/api/policy/playground')
      .set(owner.auth)
      .field('input', 'x'.repeat(64 * 1024 + 1));
    expectProblem(big, 413, 'payload_too_large');
  });
});
