import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startExtAuthzGrpc, type GrpcListener } from '../../src/protocols/ext-authz/grpc';
import { startService, type TestService } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecord, callRecordsOf } from '../support/call-records';
import { startOwnRedis, type OwnRedis } from '../support/own-redis';
import { ownDatabase } from '../support/own-database';

/**
 * Envoy's external authorization over gRPC, asked by a Go client built from Envoy's own API types
 * (github.com/envoyproxy/go-control-plane/envoy/service/auth/v3, from the Go module proxy):
 * its CheckRequests, MCP filter metadata included, are decided as the same calls through
 * POST /api/broker/check, and land in the call trail.
 */
const run = promisify(execFile);
const clientDir = path.resolve(__dirname, '../go/ext-authz-client');
let clientBin: string;
let service: TestService;
let world: BrokerWorld;
let grpcListener: GrpcListener;

interface Result {
  rpcCode?: string;
  code: number;
  allowed: boolean;
  httpStatus?: number;
  headers: Record<string, string>;
  headersToRemove?: string[];
  body?: string;
}
interface Case {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  mcp?: Record<string, unknown>;
}

beforeAll(async () => {
  clientBin = path.join(mkdtempSync(path.join(tmpdir(), 'ext-authz-client-')), 'ext-authz-client');
  await run('go', ['build', '-o', clientBin, '.'], {
    cwd: clientDir,
    env: { ...process.env, GOFLAGS: '-mod=mod' },
    timeout: 240_000,
  });
  service = await startService();
  world = await brokerWorld(service);
  grpcListener = await startExtAuthzGrpc(service.services.extAuthz, { host: '127.0.0.1', port: 0 }, service.deps.log);
}, 300_000);
afterAll(async () => {
  await grpcListener?.close();
  await service?.close();
});

async function ask(cases: Case[], brokerToken = world.broker.token, port = grpcListener.port): Promise<Result[]> {
  const args = ['-addr', `127.0.0.1:${port}`, ...(brokerToken ? ['-broker', brokerToken] : [])];
  const child = execFile(clientBin, args, { timeout: 30_000 });
  child.stdin!.end(JSON.stringify(cases));
  const out: string[] = [];
  child.stdout!.on('data', (chunk) => out.push(String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`ext-authz-client exited ${code}`);
  return JSON.parse(out.join(''));
}

/** A tool call as Envoy's MCP filter describes it. */
function toolCall(grantId: string, name: string, args: Record<string, unknown>): Case {
  return {
    method: 'POST',
    path: '/mcp',
    headers: { authorization: `Bearer ${world.agent.token}`, 'grant-id': grantId, 'content-type': 'application/json' },
    mcp: { method: 'tools/call', id: 1, params: { name, arguments: args } },
  };
}
const bodyOf = (result: Result | undefined) => JSON.parse(result?.body ?? '{}');

describe('Envoy ext_authz over gRPC, asked by a client of Envoy’s Go types', () => {
  it('decides allowed, denied, approval and budget as POST /api/broker/check does, each call in the trail', async () => {
    const read = { tool: 'repos.read_file', args: { path: 'README.md' } };
    const write = { tool: 'issues.create_comment', args: { issue: 7, body: 'LGTM' } };
    // Two identical grants per scenario: one asked through gRPC, one through the broker check.
    const pair = async (options: Record<string, unknown>) => [
      (await chainOf(service, world, 0, options)).rootId,
      (await chainOf(service, world, 0, options)).rootId,
    ];
    const [allowG, allowD] = await pair({});
    const [denyG, denyD] = await pair({});
    const [approveG, approveD] = await pair({ tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' });
    const [budgetG, budgetD] = await pair({ budget: { calls: 1, windowMs: 60_000 } });

    const results = await ask([
      toolCall(allowG!, read.tool, read.args),
      toolCall(denyG!, write.tool, write.args),
      toolCall(approveG!, write.tool, write.args),
      toolCall(budgetG!, read.tool, read.args),
      toolCall(budgetG!, read.tool, read.args),
    ]);
    const direct = [];
    for (const [grantId, call] of [
      [allowD, read],
      [denyD, write],
      [approveD, write],
      [budgetD, read],
      [budgetD, read],
    ] as const) {
      direct.push((await checkAs(service, world, grantId!, world.agent, call)).body);
    }

    const [allowed, denied, approval, firstBudgeted, spent] = results as [Result, Result, Result, Result, Result];
    expect(allowed).toMatchObject({ code: 0, allowed: true });
    expect(allowed.headersToRemove).toEqual(expect.arrayContaining(['authorization', 'grant-id']));
    expect(direct[0]).toMatchObject({ decision: 'allow' });

    expect(denied).toMatchObject({ code: 7, httpStatus: 403 });
    expect(denied!.rpcCode).toBeUndefined();
    expect(bodyOf(denied)).toMatchObject({ reason: direct[1].reason, explanation: { ...direct[1].explanation, grantId: denyG } });

    expect(approval).toMatchObject({ code: 7, httpStatus: 403 });
    expect(bodyOf(approval)).toMatchObject({ reason: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });
    expect(direct[2]).toMatchObject({ decision: 'approval_required' });

    expect(firstBudgeted).toMatchObject({ code: 0, allowed: true });
    expect(direct[3]).toMatchObject({ decision: 'allow' });
    expect(spent).toMatchObject({ code: 7, httpStatus: 429 });
    expect(bodyOf(spent).reason).toBe(direct[4].reason);
    expect(direct[4].reason).toBe('budget_exhausted');
    expect(Number(spent.headers['retry-after'])).toBe(Math.ceil(direct[4].retryAfterMs / 1000));

    // Every answer names its call, recorded as the broker check records one.
    const outcomes = [];
    for (const result of results) {
      const callId = result.headers['x-grant-call-id']!;
      expect(callId).toMatch(/^call_/);
      outcomes.push((await callRecord(service.deps.db, callId)).outcome);
    }
    expect(outcomes).toEqual(['pending', 'denied', 'awaiting_approval', 'pending', 'denied']);
  });

  it('lets an MCP message without a tool call pass unrecorded, and denies other MCP methods', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const headers = { authorization: `Bearer ${world.agent.token}`, 'grant-id': rootId };
    const [list, resources] = await ask([
      { method: 'POST', path: '/mcp', headers, mcp: { method: 'tools/list', id: 2 } },
      { method: 'POST', path: '/mcp', headers, mcp: { method: 'resources/read', id: 3, params: { uri: 'file:///etc/passwd' } } },
    ]);
    expect(list).toMatchObject({ code: 0, allowed: true });
    expect(resources).toMatchObject({ code: 7, httpStatus: 403 });
    expect(bodyOf(resources).reason).toBe('method_not_allowed');
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
  });

  it("refuses another broker's grant as unknown, a missing broker, a body over the limit", async () => {
    const { rootId } = await chainOf(service, world, 0);
    const other = await broker(service, 'grpc-other-broker');
    const [foreign] = await ask([toolCall(rootId, 'repos.read_file', { path: 'a' })], other.token);
    expect(foreign).toMatchObject({ code: 7, httpStatus: 403 });
    expect(bodyOf(foreign).reason).toBe('not_found');

    const [anonymous] = await ask([toolCall(rootId, 'repos.read_file', { path: 'a' })], '');
    // A CheckResponse, not an RPC error: Envoy answers the client 401 whatever its failure mode.
    expect(anonymous).toMatchObject({ code: 16, httpStatus: 401 });
    expect(anonymous!.rpcCode).toBeUndefined();
    const [wrongKind] = await ask([toolCall(rootId, 'repos.read_file', { path: 'a' })], world.agent.token);
    expect(wrongKind).toMatchObject({ code: 16, httpStatus: 401 });

    const huge = { ...toolCall(rootId, 'repos.read_file', { path: 'a' }), body: 'x'.repeat(70 * 1024) };
    const [tooLarge] = await ask([huge]);
    expect(tooLarge).toMatchObject({ code: 7, httpStatus: 413 });
    expect(await callRecordsOf(service.deps.db, rootId)).toEqual([]);
  });

  it('answers UNAVAILABLE, never OK, when the service is down', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const spare = await startExtAuthzGrpc(service.services.extAuthz, { host: '127.0.0.1', port: 0 }, service.deps.log);
    await spare.close();
    const [down] = await ask([toolCall(rootId, 'repos.read_file', { path: 'a' })], world.broker.token, spare.port);
    expect(down).toMatchObject({ rpcCode: 'Unavailable', code: 14, allowed: false });
  });
});

describe('Envoy ext_authz over gRPC when Redis is down', () => {
  let own: OwnRedis;
  const database = ownDatabase('ext_authz_redis_down');
  let failing: TestService;
  let listener: GrpcListener;

  beforeAll(async () => {
    own = await startOwnRedis();
    await database.migrated();
    failing = await startService({ REDIS_URL: own.url, DATABASE_URL: database.url });
    listener = await startExtAuthzGrpc(failing.services.extAuthz, { host: '127.0.0.1', port: 0 }, failing.deps.log);
  });
  afterAll(async () => {
    await listener.close();
    await failing.close();
    await own.stop();
    await database.drop();
  });

  it('answers UNAVAILABLE with a 503 and allows nothing', async () => {
    const local = await brokerWorld(failing);
    const { rootId } = await chainOf(failing, local, 0);
    await own.stop();
    const call = { ...toolCall(rootId, 'repos.read_file', { path: 'a' }) };
    call.headers = { ...call.headers, authorization: `Bearer ${local.agent.token}` };
    const [answer] = await ask([call], local.broker.token, listener.port);
    expect(answer).toMatchObject({ code: 14, allowed: false, httpStatus: 503 });
    expect(await callRecordsOf(failing.deps.db, rootId)).toEqual([]);
  });
});
