import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { policyFromSources } from '../support/policy-sources';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { broker, connection, human, installAgent, podWith, rootGrant } from '../support/world';

/**
 * `policy impact` with state: a service whose org rule labels private reads logs each check's
 * session; a candidate that adds information_flow is judged on the labels each check saw, and
 * `--max-changes` gates it.
 */
const root = path.resolve(__dirname, '../..');
const cli = path.join(root, 'dist/src/admin/cli.js');
const work = mkdtempSync(path.join(tmpdir(), 'impact-sessions-'));

/** The service's policy with the org's repositories and a labeller, under these packages' modes. */
function build(name: string, modes: string): string {
  return policyFromSources(name, {
    files: {
      'org/repositories.rego': 'package org\n\nprivate_repositories := ["acme/secret-*"]\n\npublic_repositories := ["oss/*"]\n',
      'org/labeller.rego':
        '# METADATA\n# schemas:\n#   - input: schema.broker.check\npackage org.broker.check.labeller\n\n' +
        'labels contains "private_data" if {\n\tinput.tool.access == "read"\n\tstartswith(input.resource.repository, "acme/secret-")\n}\n',
    },
    modes,
  });
}

const TOOLS = [
  { name: 'repos.read_file', access: 'read', resource: { repository: '/repository' } },
  { name: 'repos.push', access: 'write', resource: { repository: '/repository' } },
];

let service: TestService;
let serving: string;
let candidate: string;
let logFile: string;

beforeAll(async () => {
  serving = build('serving', '');
  candidate = build('candidate', 'broker.check.information_flow=enforce');
  copyFileSync(`${serving}.wasm`, path.join(work, 'live.wasm'));
  service = await startService({ DECISION_LOG: 'all', POLICY_WASM_PATH: path.join(work, 'live.wasm') });
  const owner = human(service, 'owner');
  const podId = await podWith(service, owner, []);
  const agent = await installAgent(service, owner, podId, 'bot');
  const brk = await broker(service);
  const connectionId = (await connection(service, owner, brk.id, { tools: TOOLS })).id;
  const tree = async () =>
    (await rootGrant(service, owner, connectionId, { kind: 'pod', id: podId }, { tools: TOOLS.map((t) => t.name), writeMode: 'write' })).id;
  const check = (grantId: string, tool: string, repository: string) =>
    service.http.post('/api/broker/check').set(brk.auth).send({ grantId, tool, subjectToken: agent.token, args: { repository } });

  // A labelled tree publishes twice; an unlabelled one once; a private read writes privately.
  const labelled = await tree();
  expect((await check(labelled, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
  expect((await check(labelled, 'repos.read_file', 'acme/secret-keys')).body.decision).toBe('allow');
  for (let i = 0; i < 2; i += 1) expect((await check(labelled, 'repos.push', 'oss/tool')).body.decision).toBe('allow');
  expect((await check(labelled, 'repos.push', 'acme/api')).body.decision).toBe('allow');
  expect((await check(await tree(), 'repos.push', 'oss/tool')).body.decision).toBe('allow');
  await decisionsWritten();
  logFile = path.join(work, 'decisions.log');
  writeFileSync(logFile, service.logs.join('\n'));
}, 180_000);
afterAll(async () => {
  await service.close();
  rmSync(work, { recursive: true, force: true });
});

async function impact(candidateName: string, ...extra: string[]) {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [
      cli,
      'policy',
      'impact',
      '--bundle',
      `${candidateName}.tar.gz`,
      '--log',
      logFile,
      ...extra,
    ]);
    return { code: 0, report: JSON.parse(stdout) as Record<string, unknown> };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, report: JSON.parse(failed.stdout) as Record<string, unknown> };
  }
}

it('judges a session rule on the labels each logged check saw', async () => {
  const { code, report } = await impact(candidate);
  expect(code).toBe(0);
  expect(report).toMatchObject({ changed: 2, allowToDeny: 2, denyToAllow: 0, notReplayable: { count: 0 } });
  expect(report.changes).toEqual([
    { path: 'broker/check/decision', from: 'allow', to: 'deny: information_flow', count: 2, decisionIds: expect.any(Array) },
  ]);
});

it('changes nothing with the policy that logged them', async () => {
  expect(await impact(serving)).toMatchObject({ code: 0, report: { changed: 0, allowToDeny: 0, denyToAllow: 0 } });
});

it('--max-changes fails past its number, and only past it', async () => {
  expect((await impact(candidate, '--max-changes', '1')).code).toBe(1);
  expect((await impact(candidate, '--max-changes', '2')).code).toBe(0);
  const { stderr } = await promisify(execFile)(process.execPath, [
    cli,
    'policy',
    'impact',
    '--bundle',
    `${candidate}.tar.gz`,
    '--log',
    logFile,
    '--max-changes',
    '-1',
  ]).catch((error: { stderr: string }) => error);
  expect(stderr).toContain('--max-changes');
});
