import { createServer } from 'node:http';
import path from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { grantctl as runGrantctl, type GrantctlRun } from '../support/grantctl';
import { startedServiceWith } from '../support/service';
import { attenuateGrant, rootGrant } from '../support/world';

/**
 * grantctl (CONTRACT §13) as a script would run it: the built CLI in a child process, configured by
 * GRANT_BROKER_URL and GRANT_BROKER_TOKEN, against the real service. `--json` prints exactly the
 * API's body; a refusal exits 1 with the problem document on stderr; an unreachable service exits 2.
 */
const { service, world } = startedServiceWith(brokerWorld);

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

describe('grants tree', () => {
  const line = (lines: string[], id: string) => lines.find((l) => l.includes(id)) ?? `(no line for ${id})`;

  it('shows per grant the units used in its window as the service counts them: calls through it or any grant below it', async () => {
    const root = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'pod', id: world.podId },
      { tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve', budget: { calls: 5, windowMs: 60_000 } },
    );
    const mid = await attenuateGrant(service, world.agent, root.id, { budget: { calls: 4, windowMs: 120_000 } });
    const leaf = await attenuateGrant(service, world.agent, mid.id);
    const sibling = await attenuateGrant(service, world.agent, root.id);
    await checkAs(service, world, leaf.id, world.agent).expect(200); // allowed: a unit at leaf, mid and root
    await checkAs(service, world, leaf.id, world.agent, { tool: 'pulls.merge' }).expect(200); // denied: none
    const asked = await checkAs(service, world, leaf.id, world.agent, { tool: 'issues.create_comment', args: { issue: 1, body: 'x' } });
    expect(asked.body).toMatchObject({ decision: 'approval_required' }); // awaiting a human: none
    await checkAs(service, world, sibling.id, world.agent).expect(200); // allowed: sibling and root
    const viaMid = await checkAs(service, world, mid.id, world.agent).expect(200); // allowed: mid and root
    expect(viaMid.body).toMatchObject({ decision: 'allow', budget: { remaining: 2 } }); // what the service itself says of the root

    const whole = await grantctl(['grants', 'tree', root.id]);
    expect(whole).toMatchObject({ code: 0, stderr: '' });
    const lines = whole.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(new RegExp(`^${root.id}  active  approve  3/5 per 60s  expires \\S+ ◀$`));
    expect(line(lines, mid.id)).toMatch(new RegExp(`^[├└]─ ${mid.id}  active  approve  2/4 per 120s `));
    expect(line(lines, leaf.id)).toMatch(new RegExp(`^[│ ]  └─ ${leaf.id}  active  approve  1/4 per 120s `));
    expect(line(lines, sibling.id)).toMatch(new RegExp(`^[├└]─ ${sibling.id}  active  approve  1/5 per 60s `));

    // The leaf's tree: its chain and what is below it (nothing), the root still counting the sibling's call.
    await service.http.post(`/api/grants/${mid.id}/revoke`).set(world.owner.auth).expect(200);
    const chain = await grantctl(['grants', 'tree', leaf.id]);
    expect(chain.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${root.id}  active  approve  3/5 per 60s `)),
      expect.stringMatching(new RegExp(`^└─ ${mid.id}  revoked  approve  2/4 per 120s `)),
      expect.stringMatching(new RegExp(`^   └─ ${leaf.id}  revoked  approve  1/4 per 120s .* ◀$`)),
    ]);

    const asJson = json(await grantctl(['grants', 'tree', leaf.id, '--json']));
    const rootViaApi = await service.http.get(`/api/grants/${root.id}`).set(world.owner.auth).expect(200);
    expect(asJson.items.map((g: { id: string }) => g.id)).toEqual([root.id, mid.id, leaf.id]);
    expect(asJson.items[0]).toEqual(rootViaApi.body);
    expect(asJson.nextCursor).toBeNull();
    expect(asJson.budgetUse[root.id]).toMatchObject({ used: 3, calls: 5, windowMs: 60_000, since: expect.any(String) });
    expect(asJson.budgetUse[leaf.id]).toMatchObject({ used: 1, calls: 4 });
  });

  it('a seat grant with no pod above it: its own use, and a note that grants below it cannot be listed', async () => {
    const seat = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'seat', id: world.agent.agentId },
      { budget: { calls: 3 } },
    );
    await checkAs(service, world, seat.id, world.agent).expect(200);
    const drawn = await grantctl(['grants', 'tree', seat.id]);
    expect(drawn.code).toBe(0);
    expect(drawn.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${seat.id}  active  read  1/3 per 3600s .* ◀$`)),
      expect.stringMatching(/^note: no grant of this chain targets a pod, so grants below it cannot be listed/),
    ]);
  });

  it("a call counts at each grant only within that grant's own window", async () => {
    const root = await rootGrant(
      service,
      world.owner,
      world.connectionId,
      { kind: 'pod', id: world.podId },
      { budget: { calls: 5, windowMs: 2000 } },
    );
    const child = await attenuateGrant(service, world.agent, root.id, { budget: { calls: 5, windowMs: 60_000 } });
    await checkAs(service, world, child.id, world.agent).expect(200);
    const fresh = (await grantctl(['grants', 'tree', root.id])).stdout.split('\n');
    expect(fresh[0]).toContain('  1/5 per 2s  ');
    expect(fresh[1]).toContain('  1/5 per 60s  ');
    // The service's clock comes from its Date header, to the second: past 2 s plus that second.
    await new Promise((resolve) => setTimeout(resolve, 3100));
    const later = (await grantctl(['grants', 'tree', root.id])).stdout.split('\n');
    expect(later[0]).toContain('  0/5 per 2s  ');
    expect(later[1]).toContain('  1/5 per 60s  ');
  });
});

it('calls lists the trail, newest first', async () => {
  const { leafId } = await chainOf(service, world, 2, { budget: { calls: 5, windowMs: 60_000 } });
  await checkAs(service, world, leafId, world.agent).expect(200);
  await checkAs(service, world, leafId, world.agent, { tool: 'pulls.merge' }).expect(200);
  const trail = json(await grantctl(['calls', leafId, '--json']));
  expect(trail.items.map((c: { tool: string; outcome: string }) => [c.tool, c.outcome])).toEqual([
    ['pulls.merge', 'denied'],
    ['repos.read_file', 'pending'], // allowed; the broker has not reported its outcome
  ]);
});

it('calls pages as the API does: a table says how to get the next page, --json prints the page as is', async () => {
  const { leafId } = await chainOf(service, world, 0, { budget: { calls: 5, windowMs: 60_000 } });
  for (let i = 0; i < 3; i += 1) await checkAs(service, world, leafId, world.agent).expect(200);
  const first = await grantctl(['calls', leafId, '--limit', '2']);
  expect(first.code).toBe(0);
  expect(first.stdout.trimEnd().split('\n')).toHaveLength(3); // the header and two calls
  const cursor = /^more: repeat with --cursor (\S+)$/m.exec(first.stderr)?.[1];
  expect(cursor).toBeDefined();
  const rest = json(await grantctl(['calls', leafId, '--limit', '2', '--cursor', cursor!, '--json']));
  expect(rest).toMatchObject({ items: [expect.objectContaining({ grantId: leafId })], nextCursor: null });
  const refused = await grantctl(['calls', leafId, '--limit', '500']);
  expect(refused.code).toBe(1);
  expect(JSON.parse(refused.stderr)).toMatchObject({ status: 400, code: 'invalid_request' });
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
  expect(JSON.parse(bySelf.stderr)).toMatchObject({ status: 403, code: 'credential_not_accepted' });
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

it('exit code 2 with the problem document when the service answers 5xx', async () => {
  const failing = createServer((_req, res) =>
    res
      .writeHead(500, { 'content-type': 'application/problem+json' })
      .end(JSON.stringify({ type: 'about:blank', title: 'Internal error', status: 500, code: 'internal_error', detail: 'boom' })),
  );
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
  try {
    const run = await grantctl(
      ['grants', 'show', 'grt_x'],
      world.owner.token,
      `http://127.0.0.1:${(failing.address() as AddressInfo).port}`,
    );
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(JSON.parse(run.stderr)).toMatchObject({ status: 500, code: 'internal_error', detail: 'boom' });
  } finally {
    await new Promise((resolve) => failing.close(resolve));
  }
});

describe('npx @grant-broker/grantctl from the repository root (the workspace package; `npm run build` first)', () => {
  const npx = (args: string[], url: string = service.baseUrl) => runGrantctl(args, { url, token: world.owner.token, via: 'npx' });
  // npm may print its own warnings on stderr; grantctl's problem document is the JSON line.
  const problemOf = (stderr: string) => JSON.parse(stderr.split('\n').find((l) => l.startsWith('{')) ?? 'null');

  it('--help lists the commands and exits 0', async () => {
    const help = await npx(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['grants', 'calls', 'approvals', 'agents', 'pods', 'connections', 'policy'])
      expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
  });

  it('a real command: 0 with the API body, 1 with the problem document on a 4xx, 2 when unreachable', async () => {
    const grant = await rootGrant(service, world.owner, world.connectionId, { kind: 'pod', id: world.podId });
    const shown = await npx(['grants', 'show', grant.id, '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: grant.id, status: 'active' });

    const missing = await npx(['grants', 'show', 'grt_doesnotexist']);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(problemOf(missing.stderr)).toMatchObject({ status: 404, code: 'not_found' });

    const closed = createNetServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await npx(['grants', 'show', grant.id], `http://127.0.0.1:${port}`);
    expect(unreachable).toMatchObject({ code: 2, stdout: '' });
    expect(problemOf(unreachable.stderr)).toMatchObject({ code: 'unreachable', detail: expect.stringContaining('ECONNREFUSED') });
  });
});

it('policy eval evaluates an entrypoint of the built module on a file, without a service', async () => {
  const example = path.resolve(__dirname, '../../examples/policy/broker-check-input.json');
  const module = path.resolve(__dirname, '../../build/policy/policy.wasm');
  const answer = json(await grantctl(['policy', 'eval', '--entrypoint', 'broker/check', '--input', example, '--module', module]));
  expect(answer).toMatchObject({
    entrypoint: 'broker/check/decision',
    revision: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    result: { allow: true, reason: 'allowed' },
  });
  const unknown = await grantctl(['policy', 'eval', '--entrypoint', 'nope', '--input', example, '--module', module]);
  expect(unknown).toMatchObject({ code: 1, stdout: '' });
  expect(JSON.parse(unknown.stderr)).toMatchObject({ code: 'usage', detail: expect.stringContaining('broker/check/decision') });
  const noModule = await grantctl(['policy', 'eval', '--entrypoint', 'broker/check', '--input', example, '--module', '/nonexistent.wasm']);
  expect(noModule.code).toBe(1);
  expect(JSON.parse(noModule.stderr)).toMatchObject({ code: 'usage', detail: expect.stringContaining('/nonexistent.wasm') });
});
