import { policyFromSources } from '../support/policy-sources';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith, rootGrant, type Human, type InstalledAgent } from '../support/world';

/**
 * GET /api/pods/:podId/overview through HTTP: a pod's checks per hour from the trail's tallies,
 * denials by reason and by org rule (the repository allowlist enforced), the trees nearest their
 * budget, what waits for approval; members only.
 */
const TOOLS = [
  { name: 'repos.read_file', access: 'read', resource: { repository: '/repository' } },
  { name: 'issues.create_comment', access: 'write', resource: { repository: '/repository' } },
];

let service: TestService;
let owner: Human;
let member: Human;
let outsider: Human;
let agent: InstalledAgent;
let podId: string;
let brokerAuth: { Authorization: string };
let connectionId: string;

beforeAll(async () => {
  const allowlist = policyFromSources('allowlist', { modes: 'broker.check.repository_allowlist=enforce' });
  service = await startService({ POLICY_WASM_PATH: `${allowlist}.wasm` });
  owner = human(service, 'owner');
  member = human(service, 'member');
  outsider = human(service, 'outsider');
  podId = await podWith(service, owner, [{ who: member }]);
  agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  brokerAuth = brk.auth;
  connectionId = (await connection(service, owner, brk.id, { tools: TOOLS })).id;
}, 120_000);
afterAll(async () => {
  await service?.close();
});

const check = (grantId: string, tool: string, repository: string) =>
  service.http
    .post('/api/broker/check')
    .set(brokerAuth)
    .send({ grantId, tool, subjectToken: agent.token, args: { repository, body: 'hello' } });

const overview = (who: Human, query = '') => service.http.get(`/api/pods/${podId}/overview${query}`).set(who.auth);

describe('a pod overview', () => {
  let busy: string;
  let quiet: string;

  beforeAll(async () => {
    busy = (
      await rootGrant(
        service,
        owner,
        connectionId,
        { kind: 'pod', id: podId },
        {
          tools: ['repos.read_file'],
          budget: { calls: 4, windowMs: 3_600_000 },
        },
      )
    ).id;
    quiet = (
      await rootGrant(
        service,
        owner,
        connectionId,
        { kind: 'pod', id: podId },
        {
          tools: ['repos.read_file', 'issues.create_comment'],
          writeMode: 'approve',
          budget: { calls: 100, windowMs: 3_600_000 },
        },
      )
    ).id;
    const answers = [
      await check(busy, 'repos.read_file', 'acme/api'),
      await check(busy, 'repos.read_file', 'acme/web'),
      await check(busy, 'repos.read_file', 'acme/docs'),
      await check(busy, 'issues.create_comment', 'acme/api'), // tool_not_allowed
      await check(busy, 'repos.read_file', 'evil/api'), // the org rule
      await check(quiet, 'repos.read_file', 'acme/api'),
      await check(quiet, 'issues.create_comment', 'acme/api'), // asks a human
    ];
    expect(answers.map((res) => res.body.reason)).toEqual([
      'allowed',
      'allowed',
      'allowed',
      'tool_not_allowed',
      'repository_not_allowlisted',
      'allowed',
      'approval_required',
    ]);
    await service.deps.tallies.flush();
  });

  it('counts the last 24 hours per hour, denials by reason and by org rule, and what waits', async () => {
    const res = await overview(owner).expect(200);
    expect(res.body.pod).toEqual({ id: podId, name: 'Test pod' });
    expect(res.body.range).toBe('24h');
    expect(res.body.hours).toHaveLength(24);
    const thisHour = res.body.hours.at(-1);
    expect(Date.parse(thisHour.hour)).toBeLessThanOrEqual(Date.now());
    expect(Date.now() - Date.parse(thisHour.hour)).toBeLessThan(3_600_000);
    expect(thisHour).toMatchObject({ allowed: 4, denied: 2, awaitingApproval: 1 });
    expect(res.body.totals).toEqual({ allowed: 4, denied: 2, awaitingApproval: 1 });
    expect(res.body.denialsByReason).toEqual([
      { reason: 'repository_not_allowlisted', calls: 1 },
      { reason: 'tool_not_allowed', calls: 1 },
    ]);
    expect(res.body.denialsByOrgRule).toEqual([{ rule: 'org.broker.check.repository_allowlist', calls: 1 }]);
    expect(res.body.pendingApprovals).toBe(1);
  });

  it('puts the tree nearest its budget first, with its exact use now', async () => {
    const res = await overview(member).expect(200);
    expect(res.body.nearestBudget.map((tree: { grantId: string }) => tree.grantId)).toEqual([busy, quiet]);
    expect(res.body.nearestBudget[0]).toEqual({
      grantId: busy,
      target: { kind: 'pod', id: podId },
      tools: ['repos.read_file'],
      calls: 4,
      windowMs: 3_600_000,
      used: 3,
      remaining: 1,
    });
  });

  it('reads the tallies, not the records: a count added to them shows', async () => {
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    twoHoursAgo.setUTCMinutes(0, 0, 0);
    await service.deps.db('call_tallies').insert({
      pod_id: podId,
      hour: twoHoursAgo,
      decision: 'denied',
      reason: 'revoked',
      org_rule: '',
      calls: 1_000_000,
    });
    const res = await overview(owner, '?range=7d').expect(200);
    expect(res.body.hours).toHaveLength(168);
    expect(res.body.hours.find((h: { hour: string }) => h.hour === twoHoursAgo.toISOString())).toMatchObject({ denied: 1_000_000 });
    expect(res.body.denialsByReason[0]).toEqual({ reason: 'revoked', calls: 1_000_000 });
  });

  it('is not found for anyone outside the pod, and for a pod that does not exist', async () => {
    expectProblem(await overview(outsider), 404, 'not_found');
    expectProblem(await service.http.get('/api/pods/pod_01jd0000000000000000000000/overview').set(owner.auth), 404, 'not_found');
    // An agent of the pod reads its pod through the runtime, not this route.
    expectProblem(await service.http.get(`/api/pods/${podId}/overview`).set(agent.auth), 403, 'credential_not_accepted');
  });

  it('refuses a range it does not know, and hostile ids, with a 4xx problem', async () => {
    expectProblem(await overview(owner, '?range=1y'), 400, 'invalid_request');
    for (const id of ['..', 'pod_%00', '%F0%9F%98%80'.repeat(30)]) {
      expect((await service.http.get(`/api/pods/${id}/overview`).set(owner.auth)).status).toBeGreaterThanOrEqual(400);
      expect((await service.http.get(`/api/pods/${id}/overview`).set(owner.auth)).status).toBeLessThan(500);
    }
  });
});
