import { copyFileSync, mkdtempSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { treeCallsKey, treeLabelsKey, treeVersionKey, windowKey } from '../../src/budget/keys';
import { shadowDisagreements } from '../../src/policy/shadow';
import { policyFromSources } from '../support/policy-sources';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith, rootGrant, type Human, type InstalledAgent } from '../support/world';

/**
 * Session labels across replicas, through HTTP: the shipped example information_flow, its
 * repositories filled in, enforced and then in shadow mode; and the example that limits a tool by
 * the tree's calls (branch_deletions).
 */
const work = mkdtempSync(path.join(tmpdir(), 'information-flow-'));
const live = path.join(work, 'live.wasm');

/** The module of the service's policy with the org's repositories named and these packages' modes. */
const buildModule = (name: string, modes: string) =>
  `${policyFromSources(name, {
    files: { 'org/repositories.rego': 'package org\n\nprivate_repositories := ["acme/secret-*"]\n\npublic_repositories := ["oss/*"]\n' },
    modes,
  })}.wasm`;
let shadow: string;

async function deploy(module: string): Promise<void> {
  copyFileSync(module, `${live}.next`);
  renameSync(`${live}.next`, live);
  for (const service of [a, b]) expect(await service.deps.policy.reload()).toBe(true);
}

const TOOLS = [
  { name: 'repos.read_file', access: 'read', resource: { repository: '/repository' } },
  { name: 'repos.push', access: 'write', resource: { repository: '/repository' } },
  { name: 'repos.delete_branch', access: 'write', resource: { repository: '/repository' } },
];

let a: TestService;
let b: TestService;
let owner: Human;
let agent: InstalledAgent;
let podId: string;
let connectionId: string;
let brokerAuth: { Authorization: string };

beforeAll(async () => {
  copyFileSync(buildModule('enforce', 'broker.check.information_flow=enforce,broker.check.branch_deletions=enforce'), live);
  shadow = buildModule('shadow', 'broker.check.information_flow=shadow');
  a = await startService({ POLICY_WASM_PATH: live });
  b = await startService({ POLICY_WASM_PATH: live });
  owner = human(a, 'owner');
  podId = await podWith(a, owner, []);
  agent = await installAgent(a, owner, podId, 'bot');
  const brk = await broker(a);
  brokerAuth = brk.auth;
  connectionId = (await connection(a, owner, brk.id, { tools: TOOLS })).id;
}, 120_000);
afterAll(async () => {
  await a.close();
  await b.close();
});

async function tree(): Promise<string> {
  const grant = await rootGrant(
    a,
    owner,
    connectionId,
    { kind: 'pod', id: podId },
    { tools: TOOLS.map((t) => t.name), writeMode: 'write' },
  );
  return grant.id;
}

const check = (on: TestService, grantId: string, tool: string, repository: string) =>
  on.http.post('/api/broker/check').set(brokerAuth).send({ grantId, tool, subjectToken: agent.token, args: { repository } });

const disagreements = async () =>
  (await shadowDisagreements.get()).values.find(
    (v) => v.labels.package === 'org.broker.check.information_flow' && v.labels.reason === 'information_flow',
  )?.value ?? 0;

describe('information_flow, enforced', () => {
  it('a read of a private repository on replica A refuses a public write on replica B', async () => {
    const grantId = await tree();
    // B knows the tree (and its session) before A labels it.
    expect((await check(b, grantId, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
    expect((await check(a, grantId, 'repos.read_file', 'acme/secret-keys')).body.decision).toBe('allow');
    const res = await check(b, grantId, 'repos.push', 'oss/tool');
    expect(res.body).toMatchObject({
      decision: 'deny',
      reason: 'information_flow',
      explanation: { rule: 'org.information_flow', level: 0, grantId, unlock: 'none' },
    });
    // Writes elsewhere, reads anywhere, and other trees are untouched.
    expect((await check(b, grantId, 'repos.push', 'acme/api')).body.decision).toBe('allow');
    expect((await check(a, grantId, 'repos.read_file', 'oss/tool')).body.decision).toBe('allow');
    expect((await check(a, await tree(), 'repos.push', 'oss/tool')).body.decision).toBe('allow');
  });

  it("a revoked tree's session goes with it", async () => {
    const grantId = await tree();
    expect((await check(a, grantId, 'repos.read_file', 'acme/secret-keys')).body.decision).toBe('allow');
    expect(await a.deps.redis.exists(treeLabelsKey(grantId), treeCallsKey(grantId))).toBe(2);
    await b.http.post(`/api/grants/${grantId}/revoke`).set(owner.auth).expect(200);
    expect(await a.deps.redis.exists(treeLabelsKey(grantId), treeCallsKey(grantId))).toBe(0);
    expect((await check(a, grantId, 'repos.read_file', 'acme/api')).body.reason).toBe('revoked');
  });

  it('a read of a public repository labels nothing', async () => {
    const grantId = await tree();
    expect((await check(a, grantId, 'repos.read_file', 'oss/tool')).body.decision).toBe('allow');
    expect((await check(b, grantId, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
  });

  it('a refused read labels nothing', async () => {
    const grantId = await tree();
    const other = await rootGrant(a, owner, connectionId, { kind: 'pod', id: podId }, { tools: ['repos.push'], writeMode: 'write' });
    expect((await check(a, other.id, 'repos.read_file', 'acme/secret-keys')).body.reason).toBe('tool_not_allowed');
    expect((await check(b, other.id, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
    expect(grantId).not.toBe(other.id);
  });
});

/** Redis loses the tree: its version, window, labels and calls (a restart without persistence). */
const loseTree = (rootId: string) =>
  a.deps.redis.del(treeVersionKey(rootId), windowKey(rootId, rootId), treeLabelsKey(rootId), treeCallsKey(rootId));

describe('a tree whose session Redis lost', () => {
  it('is rebuilt fail safe: labels it may have had read as labels_lost, and its calls per tool come back from the trail', async () => {
    const grantId = await tree();
    expect((await check(a, grantId, 'repos.read_file', 'acme/secret-keys')).body.decision).toBe('allow');
    for (let i = 0; i < 3; i += 1) expect((await check(b, grantId, 'repos.delete_branch', 'acme/api')).body.decision).toBe('allow');
    await loseTree(grantId);
    expect((await check(b, grantId, 'repos.push', 'oss/tool')).body).toMatchObject({ decision: 'deny', reason: 'information_flow' });
    expect((await check(a, grantId, 'repos.delete_branch', 'acme/api')).body.reason).toBe('branch_deletions_exhausted');
    // A tree that never made a call (every new tree's first check) loses nothing.
    const fresh = await tree();
    await loseTree(fresh);
    expect((await check(b, fresh, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
  });
});

describe('branch_deletions: the tree calls per tool', () => {
  it('allows three deletions in the window across replicas, then refuses and says to wait', async () => {
    const grantId = await tree();
    // Both replicas know the tree before the deletions: each decides on the count it last saw, and
    // the script charges only on the tree's own.
    expect((await check(a, grantId, 'repos.push', 'acme/api')).body.decision).toBe('allow');
    expect((await check(b, grantId, 'repos.push', 'acme/api')).body.decision).toBe('allow');
    for (const replica of [a, b, a]) expect((await check(replica, grantId, 'repos.delete_branch', 'acme/api')).body.decision).toBe('allow');
    const res = await check(b, grantId, 'repos.delete_branch', 'acme/api');
    expect(res.body).toMatchObject({
      reason: 'branch_deletions_exhausted',
      explanation: { rule: 'org.branch_deletions', unlock: 'wait', grantId },
    });
    expect((await check(a, grantId, 'repos.delete_branch', 'acme/api')).body.reason).toBe('branch_deletions_exhausted');
    expect((await check(a, grantId, 'repos.push', 'acme/api')).body.decision).toBe('allow');
  });

  it('never lets more than three of many concurrent deletions through two replicas', async () => {
    const grantId = await tree();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => check(i % 2 ? a : b, grantId, 'repos.delete_branch', 'acme/api')),
    );
    const allowed = answers.filter((r) => r.body.decision === 'allow');
    expect(allowed.length).toBeLessThanOrEqual(3);
    // A check whose count kept moving is refused rather than let through (503), never allowed.
    expect(answers.every((r) => r.status === 200 || r.status === 503)).toBe(true);
    expect((await check(a, grantId, 'repos.delete_branch', 'acme/api')).body.decision).toBe(allowed.length < 3 ? 'allow' : 'deny');
  });
});

describe('information_flow in shadow mode', () => {
  let labelled: string;
  beforeAll(async () => {
    labelled = await tree();
    expect((await check(a, labelled, 'repos.read_file', 'acme/secret-keys')).body.decision).toBe('allow');
    await deploy(shadow);
  }, 60_000);

  it('allows the public write of a labelled tree, counts the disagreement and logs it', async () => {
    const before = await disagreements();
    const res = await check(b, labelled, 'repos.push', 'oss/tool');
    expect(res.body.decision).toBe('allow');
    expect(res.body).not.toHaveProperty('explanation');
    expect(await disagreements()).toBe(before + 1);
    await decisionsWritten();
    const lines = b.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'org policy in shadow mode', package: 'org.broker.check.information_flow', disagrees: true }),
    );
  });

  it('keeps no label of its own: a private read in shadow mode taints nothing', async () => {
    const grantId = await tree();
    const read = await check(a, grantId, 'repos.read_file', 'acme/secret-keys');
    expect(read.body.decision).toBe('allow');
    const before = await disagreements();
    expect((await check(b, grantId, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
    expect(await disagreements()).toBe(before);
    await decisionsWritten();
    const events = a.logs.map((line) => JSON.parse(line) as { msg?: string; result?: { shadow_labels?: string[] } });
    expect(events.some((e) => e.msg === 'decision' && e.result?.shadow_labels?.includes('private_data'))).toBe(true);
  });
});
