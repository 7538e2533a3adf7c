import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { grantctl as runGrantctl, type GrantctlRun } from '../support/grantctl';
import { startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';

/**
 * grantctl (CONTRACT §13) as a script would run it: the built CLI in a child process, configured by
 * GRANT_BROKER_URL and GRANT_BROKER_TOKEN, against the real service. `--json` prints exactly the
 * API's body; a refusal exits 1 with the problem document on stderr; an unreachable service exits 2.
 */
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

type Run = GrantctlRun;
const grantctl = (args: string[], token: string = world.owner.token, url: string = service.baseUrl) => runGrantctl(args, { url, token });

const json = (run: Run) => {
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
};

it('grants create --json prints the API record; show, list and revoke agree with the API', async () => {
  const created = json(
    await grantctl([
      'grants',
      'create',
      '--connection',
      world.connectionId,
      '--pod',
      world.podId,
      '--tools',
      'repos.read_file,issues.create_comment',
      '--write-mode',
      'approve',
      '--calls',
      '7',
      '--repositories',
      'acme/*',
      '--json',
    ]),
  );
  const viaApi = await service.http.get(`/api/grants/${created.id}`).set(world.owner.auth).expect(200);
  expect(created).toEqual(viaApi.body);
  expect(created).toMatchObject({ writeMode: 'approve', budget: { calls: 7 }, resources: { repositories: ['acme/*'] } });

  expect(json(await grantctl(['grants', 'show', created.id, '--json']))).toEqual(viaApi.body);
  const table = await grantctl(['grants', 'list', '--pod', world.podId]);
  expect(table.code).toBe(0);
  expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+TARGET/);
  expect(table.stdout).toContain(created.id);

  const revoked = json(await grantctl(['grants', 'revoke', created.id, '--json']));
  expect(revoked).toMatchObject({ id: created.id, status: 'revoked' });
  const active = json(await grantctl(['grants', 'list', '--pod', world.podId, '--status', 'active', '--json']));
  expect(active.items.map((g: { id: string }) => g.id)).not.toContain(created.id);
});

it('grants tree draws the chain with status and budget use; calls lists the trail', async () => {
  const { rootId, ids, leafId } = await chainOf(service, world, 2, { budget: { calls: 5, windowMs: 60_000 } });
  await checkAs(service, world, leafId, world.agent).expect(200);
  await checkAs(service, world, leafId, world.agent, { tool: 'pulls.merge' }).expect(200);
  await service.http.post(`/api/grants/${ids[1]}/revoke`).set(world.owner.auth).expect(200);

  const drawn = await grantctl(['grants', 'tree', rootId]);
  expect(drawn.code).toBe(0);
  const lines = drawn.stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(3);
  expect(lines[0]).toMatch(new RegExp(`^${rootId}  active  read  0/5 per 60s .* ◀$`));
  expect(lines[1]).toMatch(new RegExp(`^└─ ${ids[1]}  revoked`));
  expect(lines[2]).toMatch(new RegExp(`^   └─ ${leafId}  revoked  read  1/\\d+ per 60s`));

  const trail = json(await grantctl(['calls', leafId, '--json']));
  expect(trail.items.map((c: { tool: string; outcome: string }) => [c.tool, c.outcome])).toEqual([
    ['pulls.merge', 'denied'],
    ['repos.read_file', 'pending'], // allowed; the broker has not reported its outcome
  ]);
});

it('approvals list and approve: the broker re-sends the call and it is allowed once', async () => {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    {
      tools: ['issues.create_comment'],
      writeMode: 'approve',
    },
  );
  const call = { tool: 'issues.create_comment', args: { issue: 9, body: 'lgtm' } };
  const asked = await checkAs(service, world, grant.id, world.agent, call).expect(200);
  expect(asked.body).toMatchObject({ decision: 'approval_required' });
  const { approvalId } = asked.body;

  const pending = await grantctl(['approvals', 'list']);
  expect(pending.code).toBe(0);
  expect(pending.stdout).toMatch(new RegExp(`${approvalId}\\s+pending\\s+issues.create_comment`));
  // The agent may not decide its own call: an agent credential is refused, exit 1.
  const bySelf = await grantctl(['approvals', 'approve', approvalId], world.agent.token);
  expect(bySelf.code).toBe(1);
  expect(JSON.parse(bySelf.stderr)).toMatchObject({ status: expect.any(Number), code: expect.any(String) });
  expect(bySelf.stdout).toBe('');

  const approved = json(await grantctl(['approvals', 'approve', approvalId, '--note', 'fine', '--json']));
  expect(approved).toMatchObject({ id: approvalId, state: 'approved', decidedBy: world.owner.userId });
  const twice = await grantctl(['approvals', 'deny', approvalId]);
  expect(twice.code).toBe(1);
  expect(JSON.parse(twice.stderr)).toMatchObject({ status: 409 });

  const resent = await checkAs(service, world, grant.id, world.agent, { ...call, approvalId }).expect(200);
  expect(resent.body).toMatchObject({ decision: 'allow' });
});

it('agents status, stop and start change the runtime as the API does', async () => {
  const stopped = json(await grantctl(['agents', 'stop', world.podId, 'bot', '--json']));
  expect(stopped).toMatchObject({ desiredState: 'stopped' });
  const status = await grantctl(['agents', 'status', world.podId, 'bot']);
  expect(status).toMatchObject({ code: 0, stdout: expect.stringMatching(/^bot: desired stopped/) });
  expect(json(await grantctl(['agents', 'start', world.podId, 'bot', '--json']))).toMatchObject({ desiredState: 'running' });
});

it('exit codes: 1 with the problem document for a refusal, 2 when the service cannot be reached', async () => {
  const missing = await grantctl(['grants', 'show', 'grt_doesnotexist']);
  expect(missing).toMatchObject({ code: 1, stdout: '' });
  expect(JSON.parse(missing.stderr)).toMatchObject({ status: 404, code: 'not_found' });

  const noToken = await grantctl(['grants', 'list', '--pod', world.podId], '');
  expect(noToken.code).toBe(1);
  expect(JSON.parse(noToken.stderr)).toMatchObject({ status: 401 });

  const badInput = await grantctl([
    'grants',
    'create',
    '--connection',
    world.connectionId,
    '--pod',
    world.podId,
    '--tools',
    'no such tool',
  ]);
  expect(badInput.code).toBe(1);
  expect(JSON.parse(badInput.stderr)).toMatchObject({ status: 400 });

  const unreachable = await grantctl(['grants', 'list', '--pod', world.podId], world.owner.token, 'http://127.0.0.1:9');
  expect(unreachable).toMatchObject({ code: 2, stdout: '' });
  expect(JSON.parse(unreachable.stderr)).toMatchObject({ code: 'unreachable' });
  // The token is never echoed back, whatever went wrong.
  for (const run of [missing, noToken, badInput, unreachable]) expect(run.stderr).not.toContain(world.owner.token);
});

it('policy eval and policy impact work on files, without a service', async () => {
  const example = path.resolve(__dirname, '../../examples/policy/broker-check-input.json');
  const answer = json(await grantctl(['policy', 'eval', '--entrypoint', 'broker/check', '--input', example]));
  expect(answer).toMatchObject({ entrypoint: 'broker/check/decision', result: { allow: true, reason: 'allowed' } });
  const unknown = await grantctl(['policy', 'eval', '--entrypoint', 'nope', '--input', example]);
  expect(unknown.code).toBe(1);
  expect(JSON.parse(unknown.stderr)).toMatchObject({ code: 'usage', detail: expect.stringContaining('broker/check/decision') });

  // The decision events of a denied check, replayed through the built bundle: nothing changes.
  const log = path.join(mkdtempSync(path.join(tmpdir(), 'grantctl-')), 'decisions.jsonl');
  const event = { decision_id: 'd1', path: 'broker/check/decision', input: JSON.parse(readFileSync(example, 'utf8')) };
  writeFileSync(log, `${JSON.stringify({ ...event, result: { allow: true, reason: 'allowed' } })}\n`);
  const bundle = path.resolve(__dirname, '../../build/policy/bundle.tar.gz');
  const impact = json(await grantctl(['policy', 'impact', bundle, '--log', log, '--json']));
  expect(impact).toMatchObject({ replayed: 1, changed: 0, changes: [] });
  writeFileSync(log, `${JSON.stringify({ ...event, result: { allow: false, reason: 'tool_not_allowed' } })}\n`);
  const changed = await grantctl(['policy', 'impact', bundle, '--log', log]);
  expect(changed.code).toBe(0);
  expect(changed.stdout).toMatch(/1 replayed, 0 skipped, 1 would change/);
  expect(changed.stdout).toMatch(/broker\/check\/decision\s+deny: tool_not_allowed\s+allow\s+1\s+d1/);
});
