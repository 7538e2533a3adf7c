import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { startService, type TestService } from '../support/service';

/**
 * `policy impact` (issue 11): the decisions a service logged, replayed through a candidate bundle
 * whose new org rule freezes a tool, report exactly the calls that rule would have denied.
 */
const root = path.resolve(__dirname, '../..');
const cli = path.join(root, 'dist/src/admin/cli.js');
const work = mkdtempSync(path.join(tmpdir(), 'impact-'));
let service: TestService;

beforeAll(async () => {
  const sources = path.join(work, 'policies');
  cpSync(path.join(root, 'policies'), sources, { recursive: true });
  writeFileSync(
    path.join(sources, 'org/frozen_tool.rego'),
    [
      '# METADATA',
      '# schemas:',
      '#   - input: schema.broker.check',
      'package org.broker.check.frozen_tool',
      '',
      'deny contains {"reason": "tool_frozen", "message": "repos.read_file is frozen"} if input.tool.name == "repos.read_file"',
      '',
    ].join('\n'),
  );
  for (const [name, env] of [
    ['candidate', { POLICY_SOURCES: sources }],
    ['current', {}],
  ] as const) {
    execFileSync(process.execPath, [path.join(root, 'scripts/build-policy.mjs')], {
      env: {
        ...process.env,
        ...env,
        POLICY_BUILD_OUT: path.join(work, `${name}.wasm`),
        POLICY_BUNDLE_OUT: path.join(work, `${name}.tar.gz`),
      },
      stdio: 'ignore',
    });
  }
  service = await startService({ DECISION_LOG: 'all' });
}, 60_000);
afterAll(async () => {
  await service.close();
  rmSync(work, { recursive: true, force: true });
});

it('reports the decisions a candidate would change, by path and reason, and none for the policy serving', async () => {
  const world = await brokerWorld(service);
  const { leafId } = await chainOf(service, world, 1);
  for (let i = 0; i < 3; i += 1) expect((await checkAs(service, world, leafId, world.agent)).body.decision).toBe('allow');
  expect((await checkAs(service, world, leafId, world.agent, { tool: 'pulls.merge' })).body.reason).toBe('tool_not_allowed');
  await new Promise((resolve) => setImmediate(resolve));
  const logFile = path.join(work, 'decisions.log');
  writeFileSync(logFile, service.logs.join(''));

  const run = async (bundle: string) =>
    JSON.parse((await promisify(execFile)(process.execPath, [cli, 'policy', 'impact', '--bundle', bundle, '--log', logFile])).stdout);
  const impact = await run(path.join(work, 'candidate.tar.gz'));
  expect(impact.replayed).toBeGreaterThanOrEqual(4);
  expect(impact.changes).toContainEqual(
    expect.objectContaining({ path: 'broker/check/decision', from: 'allow', to: 'deny: tool_frozen', count: 3 }),
  );
  // The denied call stays denied, for its own reason first: not a change.
  expect(impact.changes.filter((c: { from: string }) => c.from === 'deny: tool_not_allowed')).toEqual([]);
  expect((await run(path.join(work, 'current.tar.gz'))).changed).toBe(0);
});
