import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { bearer, startedService } from '../support/service';
import { AUTHENTICATED_NON_HUMAN, probeNonHuman } from '../support/credentials';

/**
 * The operator commands (issue 2, item 10), run as the built CLI against this run's database:
 * `npm run admin -- demo --json` prints exactly one JSON object whose credentials work, and
 * `broker register` prints a token once. Tools outside the repo parse this stdout.
 */
const run = promisify(execFile);
const cli = path.resolve(__dirname, '../../dist/src/admin/cli.js');
const service = startedService();

async function admin(args: string[], env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, timeout: 20_000 });
}

describe('npm run admin -- demo --json', () => {
  it('prints one JSON object with the demo world, and nothing else on stdout', async () => {
    const { stdout } = await admin(['demo', '--json']);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const world = JSON.parse(lines[0]!);
    expect(world).toEqual({
      pod: { id: expect.stringMatching(/^pod_/) },
      owner: { userId: expect.any(String), token: expect.any(String) },
      member: { userId: expect.any(String), token: expect.any(String) },
      connection: { id: expect.stringMatching(/^con_/) },
      broker: { id: expect.stringMatching(/^brk_/), token: expect.stringMatching(/^bkt_/) },
      agent: { name: expect.any(String), agentId: expect.stringMatching(/^agt_/), token: expect.stringMatching(/^art_/) },
      approval: { id: expect.stringMatching(/^apr_/), grantId: expect.stringMatching(/^grt_/) },
      grant: { id: expect.stringMatching(/^grt_/) },
    });

    // The printed credentials work against the service.
    const pod = await service.http.get(`/api/pods/${world.pod.id}`).set(bearer(world.owner.token));
    expect(pod.status).toBe(200);
    const members = await service.http.get(`/api/pods/${world.pod.id}/members`).set(bearer(world.member.token)).expect(200);
    expect(members.body.items.map((m: { memberId: string }) => m.memberId)).toEqual(
      expect.arrayContaining([world.owner.userId, world.member.userId, world.agent.agentId]),
    );
    const connection = await service.http.get(`/api/connections/${world.connection.id}`).set(bearer(world.owner.token));
    expect(connection.status).toBe(200);
    expect(connection.body).toMatchObject({ kind: 'code_hosting_app', brokerId: world.broker.id, status: 'connected' });
    // The agent's write waits for the owner, who can read what it would write.
    const approval = await service.http.get(`/api/approvals/${world.approval.id}`).set(bearer(world.owner.token)).expect(200);
    expect(approval.body).toMatchObject({ state: 'pending', tool: 'issues.create_comment', grantId: world.approval.grantId });
    expect(approval.body.args).toMatchObject({ repository: 'acme/widgets', issue_number: 42 });
    expect(await probeNonHuman(service, world.agent.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    expect(await probeNonHuman(service, world.broker.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    // The member is a plain member: managing the pod is refused.
    const refused = await service.http
      .post(`/api/pods/${world.pod.id}/members`)
      .set(bearer(world.member.token))
      .send({ userId: 'x', role: 'member' });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: 'not_pod_admin' });
  });
});

describe('npm run admin -- broker register', () => {
  it('prints the broker id and its token once, as JSON', async () => {
    const { stdout } = await admin(['broker', 'register', '--name', 'cli-broker']);
    const registered = JSON.parse(stdout);
    expect(registered).toEqual({ id: expect.stringMatching(/^brk_/), token: expect.stringMatching(/^bkt_/) });
    expect(await probeNonHuman(service, registered.token)).toEqual(AUTHENTICATED_NON_HUMAN);
  });

  it('writes its log lines to stderr, never into the JSON on stdout (Redis unreachable here)', async () => {
    const { stdout, stderr } = await admin(['broker', 'register', '--name', 'quiet-broker'], { REDIS_URL: 'redis://127.0.0.1:1/0' });
    expect(stderr).toContain('redis');
    expect(JSON.parse(stdout)).toEqual({ id: expect.stringMatching(/^brk_/), token: expect.stringMatching(/^bkt_/) });
  });

  it('refuses to run without a name (usage, exit code 2)', async () => {
    await expect(admin(['broker', 'register'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage') });
  });
});

describe('npm run admin -- policy eval', () => {
  const example = path.resolve(__dirname, '../../examples/policy/broker-check-input.json');

  it('evaluates the built module on an input file and prints the decision', async () => {
    const { stdout } = await admin(['policy', 'eval', '--entrypoint', 'broker/check', '--input', example]);
    const answer = JSON.parse(stdout);
    expect(answer).toMatchObject({ entrypoint: 'broker/check/decision', revision: expect.stringMatching(/^sha256:/) });
    expect(answer.result).toMatchObject({ allow: true, reason: 'allowed', org: { denials: [], approvals: [], shadow: [] } });
  });

  it('names what an input lacks instead of deciding on it (exit 2)', async () => {
    const bad = path.join(tmpdir(), `bad-input-${process.pid}.json`);
    writeFileSync(bad, JSON.stringify({ now_ms: 1 }));
    const failed = admin(['policy', 'eval', '--entrypoint', 'broker/check', '--input', bad]);
    await expect(failed).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('broker_id') });
  });

  it('refuses an entrypoint the catalogue does not have (exit 2)', async () => {
    await expect(admin(['policy', 'eval', '--entrypoint', 'nope/decision', '--input', example])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('broker/check/decision'),
    });
  });
});

describe('npm run admin -- trail', () => {
  it('holds and releases a grant tree by any of its grants, and refuses a grant that does not exist', async () => {
    const world = await brokerWorld(service);
    const { rootId, leafId } = await chainOf(service, world, 1);
    expect(JSON.parse((await admin(['trail', 'hold', '--grant', leafId])).stdout)).toEqual({ held: { rootGrantId: rootId } });
    expect(JSON.parse((await admin(['trail', 'release', '--grant', rootId])).stdout)).toEqual({
      released: { rootGrantId: rootId, releasedRecords: 0 },
    });
    await expect(admin(['trail', 'hold', '--grant', 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab'])).rejects.toMatchObject({ code: 1 });
    await expect(admin(['trail', 'hold'])).rejects.toMatchObject({ code: 2 });
  }, 90_000);

  it('exports a day as gzip JSON lines the API would serve, and prints and writes its SHA-256', async () => {
    const world = await brokerWorld(service);
    const { rootId } = await chainOf(service, world, 0);
    const check = await checkAs(service, world, rootId, world.agent);
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'trail-export-')), 'day.jsonl.gz');
    const day = new Date().toISOString().slice(0, 10);
    const printed = JSON.parse((await admin(['trail', 'export', '--day', day, '--out', out])).stdout);
    const bytes = readFileSync(out);
    expect(printed).toMatchObject({ day, file: out, sha256: createHash('sha256').update(bytes).digest('hex') });
    expect(readFileSync(`${out}.sha256`, 'utf8')).toBe(`${printed.sha256}  day.jsonl.gz\n`);
    const lines = gunzipSync(bytes).toString('utf8').trim().split('\n');
    expect(lines).toHaveLength(printed.records);
    const served = await service.http.get(`/api/grants/${rootId}/calls`).set(world.owner.auth);
    expect(lines.map((line) => JSON.parse(line))).toContainEqual(served.body.items.find((r: { id: string }) => r.id === check.body.callId));
    await expect(admin(['trail', 'export', '--day', '2026-02-30', '--out', out])).rejects.toMatchObject({ code: 1 });
  }, 60_000);
});
