import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ManualClock } from '../support/clock';
import { policyFromSources } from '../support/policy-sources';
import { expectProblem } from '../support/problems';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';
import { uuidOf } from '../support/call-records';

/**
 * CONTRACT §10 through HTTP: the shipped example org packages, switched on by ORG_POLICY_MODES at
 * build time, enforced and then in shadow mode after a hot reload of the module.
 */
const work = mkdtempSync(path.join(tmpdir(), 'org-policies-'));
const live = path.join(work, 'live.wasm');

/** The module of the service's policy with these org packages' modes. */
const buildModule = (name: string, modes: string) => `${policyFromSources(name, { modes })}.wasm`;
const modules: Record<'enforce' | 'shadow' | 'grants', string> = { enforce: '', shadow: '', grants: '' };

/** Swaps the module the service loads, as a deployment does (atomic rename), and reloads it. */
async function deploy(service: TestService, module: string): Promise<void> {
  copyFileSync(module, `${live}.next`);
  renameSync(`${live}.next`, live);
  expect(await service.deps.policy.reload()).toBe(true);
}

// Wednesday 2026-11-25, 10:00 in Berlin (UTC+1): working hours.
const WEDNESDAY_10_BERLIN = Date.parse('2026-11-25T09:00:00Z');
const TOOLS = [
  { name: 'repos.read_file', access: 'read', resource: { repository: '/repository', ref: '/ref' } },
  { name: 'repos.push', access: 'write', resource: { repository: '/repository', ref: '/ref' } },
];

let service: TestService;
let clock: ManualClock;
let owner: Human;
let agent: InstalledAgent;
let connectionId: string;
let podId: string;
let brokerAuth: { Authorization: string };
let grantId: string;

beforeAll(async () => {
  modules.enforce = buildModule('enforce', 'broker.check.protected_branches=enforce,broker.check.working_hours=enforce');
  modules.shadow = buildModule('shadow', 'broker.check.protected_branches=shadow,broker.check.working_hours=shadow');
  modules.grants = buildModule('grants', 'broker.check.repository_allowlist=enforce');
  copyFileSync(modules.enforce, live);
  clock = new ManualClock(WEDNESDAY_10_BERLIN);
  service = await startService({ POLICY_WASM_PATH: live, POLICY_TIME_ZONE: 'Europe/Berlin' }, { clock });
  owner = human(service, 'owner');
  podId = await podWith(service, owner, []);
  agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  brokerAuth = brk.auth;
  connectionId = (await connection(service, owner, brk.id, { tools: TOOLS })).id;
  const grant = await service.http
    .post('/api/grants')
    .set(owner.auth)
    .send({ connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file', 'repos.push'], writeMode: 'write' });
  grantId = grant.body.id;
}, 120_000);
afterAll(async () => {
  await service?.close();
  rmSync(work, { recursive: true, force: true });
});

function push(ref: string, repository = 'acme/api') {
  return service.http
    .post('/api/broker/check')
    .set(brokerAuth)
    .send({ grantId, tool: 'repos.push', subjectToken: agent.token, args: { repository, ref, content: 'top secret diff' } });
}

async function disagreements(): Promise<number> {
  const res = await service.http.get('/metrics');
  const line = res.text
    .split('\n')
    .find((l) =>
      l.startsWith('policy_shadow_disagreements_total{package="org.broker.check.protected_branches",reason="default_branch_write"}'),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('an enforced org package', () => {
  beforeAll(() => deploy(service, modules.enforce));

  it('denies a write to main with its own reason and message, and records that reason', async () => {
    const res = await push('refs/heads/main');
    expect(res.body).toMatchObject({
      decision: 'deny',
      reason: 'default_branch_write',
      message: 'writes to a default branch go through a pull request',
    });
    const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(owner.auth);
    expect(calls.body.items.find((c: { id: string }) => c.id === res.body.callId)).toMatchObject({
      outcome: 'denied',
      reason: 'default_branch_write',
    });
  });

  it('lets a write to a feature branch through, its decision event stamped by the service clock', async () => {
    const res = await push('refs/heads/feature/x');
    expect(res.body).toMatchObject({ decision: 'allow', reason: 'allowed' });
    // An allowed call's record names the decision that allowed it (and no approval); its event carries the clock's time.
    const calls = await service.http.get(`/api/grants/${grantId}/calls`).set(owner.auth);
    const record = calls.body.items.find((c: { id: string }) => c.id === res.body.callId);
    expect(record.approvalId).toBeNull();
    const decisionId = record.decisionId as string;
    await decisionsWritten();
    const event = service.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.decision_id === decisionId);
    expect(event?.timestamp).toBe(new Date(clock.now()).toISOString());
  });

  it('reads the time in POLICY_TIME_ZONE: a write on Saturday is denied, a read is not', async () => {
    clock.advance(3 * 86_400_000);
    try {
      expect((await push('refs/heads/feature/x')).body).toMatchObject({ decision: 'deny', reason: 'outside_working_hours' });
      const read = await service.http
        .post('/api/broker/check')
        .set(brokerAuth)
        .send({ grantId, tool: 'repos.read_file', subjectToken: agent.token, args: { repository: 'acme/api', ref: 'main' } });
      expect(read.body.reason).toBe('allowed');
    } finally {
      clock.advance(-3 * 86_400_000);
    }
  });

  it('a core reason still comes first', async () => {
    const grant = await service.http
      .post('/api/grants')
      .set(owner.auth)
      .send({ connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.push'], writeMode: 'write' });
    await service.http.post(`/api/grants/${grant.body.id}/revoke`).set(owner.auth).expect(200);
    const res = await service.http
      .post('/api/broker/check')
      .set(brokerAuth)
      .send({ grantId: grant.body.id, tool: 'repos.push', subjectToken: agent.token, args: { repository: 'acme/api', ref: 'main' } });
    expect(res.body).toMatchObject({ decision: 'deny', reason: 'revoked' });
    expect(res.body.message).toBeUndefined();
  });
});

describe('the same package in shadow mode, switched by a hot reload', () => {
  beforeAll(() => deploy(service, modules.shadow));

  it('allows the write to main and counts one disagreement, logged with the decision id', async () => {
    const before = await disagreements();
    const res = await push('refs/heads/main');
    expect(res.body).toMatchObject({ decision: 'allow', reason: 'allowed' });
    expect(res.body.message).toBeUndefined();
    expect(await disagreements()).toBe(before + 1);
    const shadowLine = service.logs.filter((l) => l.includes('org policy in shadow mode')).at(-1);
    expect(JSON.parse(shadowLine!)).toMatchObject({
      package: 'org.broker.check.protected_branches',
      reason: 'default_branch_write',
      effect: 'deny',
      disagrees: true,
      decision_id: expect.any(String),
    });
  });

  it('counts nothing when the shadow package has nothing to say', async () => {
    const before = await disagreements();
    await push('refs/heads/feature/y');
    expect(await disagreements()).toBe(before);
  });
});

describe('org rules and the arguments', () => {
  it('never log or store them, enforced or shadowed', async () => {
    const rows = await service.deps.db.raw(`select row_to_json(c)::text as row from call_records c where grant_id = ?::uuid`, [
      uuidOf('grant', grantId),
    ]);
    expect(rows.rows.length).toBeGreaterThan(3);
    for (const { row } of rows.rows as Array<{ row: string }>) expect(row).not.toContain('top secret diff');
    await decisionsWritten();
    expect(service.logs.join('\n')).not.toContain('top secret diff');
  });
});

describe('the repository allowlist', () => {
  it('is refused by the build when it names no decision the service asks', () => {
    expect(() => buildModule('never', 'broker.check.no_such_package=enforce')).toThrow();
  });

  it('an allowlist rule denies a repository outside it, and a grant constrained to it still decides first', async () => {
    await deploy(service, modules.grants);
    expect((await push('refs/heads/x', 'evil/api')).body.reason).toBe('repository_not_allowlisted');
    expect((await push('refs/heads/x', 'acme/api')).body.reason).toBe('allowed');
    const constrained = await service.http
      .post('/api/grants')
      .set(owner.auth)
      .send({
        connectionId,
        target: { kind: 'pod', id: podId },
        tools: ['repos.push'],
        writeMode: 'write',
        resources: { repositories: ['acme/web'] },
      });
    const res = await service.http
      .post('/api/broker/check')
      .set(brokerAuth)
      .send({ grantId: constrained.body.id, tool: 'repos.push', subjectToken: agent.token, args: { repository: 'evil/api', ref: 'x' } });
    expect(res.body.reason).toBe('resource_not_allowed');
    expect(res.body.message).toBeUndefined();
    expectProblem(await service.http.get('/api/grants/grt_nope').set(owner.auth), 404, 'not_found');
  });
});
