import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { policyFromSources } from '../support/policy-sources';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith } from '../support/world';

/**
 * `policy impact` (issue 11): the decisions a service logged, replayed through a candidate
 * bundle, report exactly the decisions the candidate changes: a frozen tool, a frozen repository
 * on a grant constrained to repositories (the logged `resource` is what the candidate reads).
 * What the log does not hold (an org mask erased `resource`) is reported as not replayable.
 */
const root = path.resolve(__dirname, '../..');
const cli = path.join(root, 'dist/src/admin/cli.js');
const work = mkdtempSync(path.join(tmpdir(), 'impact-'));

const ORG_RULES = {
  frozen_tool: 'deny contains {"reason": "tool_frozen", "message": "frozen"} if input.tool.name == "repos.read_file"',
  frozen_repository: 'deny contains {"reason": "repository_frozen", "message": "frozen"} if input.resource.repository == "acme/web"',
};

/** An org package of one rule, for the broker check. */
const orgRule = (name: keyof typeof ORG_RULES) => ({
  [`org/${name}.rego`]: `# METADATA\n# schemas:\n#   - input: schema.broker.check\npackage org.broker.check.${name}\n\n${ORG_RULES[name]}\n`,
});

const candidates: Record<string, string> = {};
beforeAll(() => {
  candidates.current = policyFromSources('current');
  candidates.frozenTool = policyFromSources('frozen-tool', { files: orgRule('frozen_tool') });
  candidates.frozenRepository = policyFromSources('frozen-repository', { files: orgRule('frozen_repository') });
  // An org that keeps resources out of its decision logs (OPA's system.log.mask).
  candidates.erasingResources = policyFromSources('erasing-resources', {
    files: { 'system/log.rego': 'package system.log\n\nmask contains "/input/resource" if input.path == "broker/check/decision"\n' },
  });
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function impact(candidate: string, log: string) {
  const { stdout } = await promisify(execFile)(process.execPath, [
    cli,
    'policy',
    'impact',
    '--bundle',
    `${candidate}.tar.gz`,
    '--log',
    log,
  ]);
  return JSON.parse(stdout);
}

describe('a frozen tool', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ DECISION_LOG: 'all' });
  });
  afterAll(() => service.close());

  it('reports the decisions a candidate would change, by path and reason, and none for the policy serving', async () => {
    const world = await brokerWorld(service);
    const { leafId } = await chainOf(service, world, 1);
    for (let i = 0; i < 3; i += 1) expect((await checkAs(service, world, leafId, world.agent)).body.decision).toBe('allow');
    expect((await checkAs(service, world, leafId, world.agent, { tool: 'pulls.merge' })).body.reason).toBe('tool_not_allowed');
    await decisionsWritten();
    const logFile = path.join(work, 'frozen-tool.log');
    writeFileSync(logFile, service.logs.join(''));

    const report = await impact(candidates.frozenTool!, logFile);
    expect(report.replayed).toBeGreaterThanOrEqual(4);
    expect(report.changes).toContainEqual(
      expect.objectContaining({ path: 'broker/check/decision', from: 'allow', to: 'deny: tool_frozen', count: 3 }),
    );
    // The denied call stays denied, for its own reason first: not a change.
    expect(report.changes.filter((c: { from: string }) => c.from === 'deny: tool_not_allowed')).toEqual([]);
    expect(await impact(candidates.current!, logFile)).toMatchObject({ changed: 0, notReplayable: { count: 0 } });
  });
});

const POINTER_TOOLS = [{ name: 'repos.read_file', access: 'read', resource: { repository: '/repository', path: '/path' } }];

/** A grant constrained to acme/*: 3 calls on acme/api and 2 on acme/web allowed, 1 on evil/api denied. */
async function callsOnRepositories(service: TestService) {
  const owner = human(service, 'owner');
  const podId = await podWith(service, owner);
  const agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  const connectionId = (await connection(service, owner, brk.id, { tools: POINTER_TOOLS })).id;
  const grant = await service.http
    .post('/api/grants')
    .set(owner.auth)
    .send({ connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file'], resources: { repositories: ['acme/*'] } })
    .expect(201);
  const check = (repository: string) =>
    service.http
      .post('/api/broker/check')
      .set(brk.auth)
      .send({ grantId: grant.body.id, tool: 'repos.read_file', subjectToken: agent.token, args: { repository, path: 'README.md' } });
  for (const repository of ['acme/api', 'acme/web', 'acme/api', 'acme/web', 'acme/api']) {
    expect((await check(repository)).body.decision).toBe('allow');
  }
  expect((await check('evil/api')).body.reason).toBe('resource_not_allowed');
}

describe('a grant constrained to repositories, replayed from the service’s own log', () => {
  let service: TestService;
  let logFile: string;
  let events: Array<{ decision_id: string; path: string; input: { resource?: { repository?: string } } }>;

  beforeAll(async () => {
    service = await startService({ DECISION_LOG: 'all' });
    await callsOnRepositories(service);
    await decisionsWritten();
    logFile = path.join(work, 'repositories.log');
    writeFileSync(logFile, service.logs.join(''));
    events = service.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'decision');
  });
  afterAll(() => service.close());

  it('logs the resource each call touched (only args are masked)', () => {
    const checks = events.filter((e) => e.path === 'broker/check/decision');
    expect(checks.map((e) => e.input.resource?.repository)).toEqual([
      'acme/api',
      'acme/web',
      'acme/api',
      'acme/web',
      'acme/api',
      'evil/api',
    ]);
  });

  it('replays through the bundle serving with no change: nothing turns into resource_unknown', async () => {
    const report = await impact(candidates.current!, logFile);
    expect(report).toMatchObject({ changed: 0, changes: [], notReplayable: { count: 0 } });
    expect(report.replayed).toBe(events.length);
  });

  it('a candidate freezing acme/web changes exactly the two allowed calls on acme/web', async () => {
    const web = events.filter((e) => e.input.resource?.repository === 'acme/web').map((e) => e.decision_id);
    const report = await impact(candidates.frozenRepository!, logFile);
    expect(report.changed).toBe(2);
    expect(report.changes).toEqual([
      { path: 'broker/check/decision', from: 'allow', to: 'deny: repository_frozen', count: 2, decisionIds: expect.any(Array) },
    ]);
    expect([...report.changes[0].decisionIds].sort()).toEqual([...web].sort());
  });
});

describe('decisions whose resource the org erased, from a collector’s gzip batches', () => {
  it('are not replayable: counted apart, never as a change', async () => {
    const batches = path.join(work, 'batches');
    mkdirSync(batches);
    let received = 0;
    const collector: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        // As received: gzip JSON arrays, one file per batch.
        writeFileSync(path.join(batches, `batch-${String((received += 1)).padStart(4, '0')}.json.gz`), Buffer.concat(chunks));
        res.writeHead(204).end();
      });
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => collector.once('listening', resolve));
    try {
      const service = await startService({
        POLICY_WASM_PATH: `${candidates.erasingResources}.wasm`,
        DECISION_LOG_URL: `http://127.0.0.1:${(collector.address() as AddressInfo).port}/logs`,
        DECISION_LOG_BATCH_EVENTS: '4',
      });
      try {
        await callsOnRepositories(service);
      } finally {
        await service.close(); // flushes what is left
      }
    } finally {
      await new Promise((resolve) => collector.close(resolve));
    }
    expect(received).toBeGreaterThan(1);

    const report = await impact(candidates.frozenRepository!, batches);
    expect(report.notReplayable).toMatchObject({ count: 6, fields: { '/input/resource': 6 } });
    expect(report.notReplayable.decisionIds).toHaveLength(5);
    expect(report).toMatchObject({ changed: 0, changes: [] });
    // The rest (grants/create, registry, pods…) replayed as usual.
    expect(report.replayed).toBeGreaterThan(0);
  });
});
