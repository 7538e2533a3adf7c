import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connectionTools } from '../../gateway/src/github/tools';
import { startCodeHost, type CodeHost } from '../support/code-host';
import { grantctl } from '../support/grantctl';
import { startService, type TestService } from '../support/service';
import { broker, human, installAgent, podWith, type Human, type InstalledAgent } from '../support/world';

/**
 * The reference MCP broker (examples/mcp-broker) end to end: a real MCP client starts the built
 * broker over stdio, the broker checks every call with the real service and calls a stand-in
 * code-hosting API only on allow. The agent lists its tools, reads, is denied a tool and a
 * repository outside its grant, waits for a human who approves with grantctl, exhausts its budget
 * and is cut off by a revoke. Whatever is denied never reaches the code host.
 */
const main = path.resolve(__dirname, '../../dist/examples/mcp-broker/main.js');
let service: TestService;
let codeHost: CodeHost;
let owner: Human;
let agent: InstalledAgent;
let brokerToken: string;
let connectionId: string;
let podId: string;
const sessions: Client[] = [];

beforeAll(async () => {
  service = await startService();
  codeHost = await startCodeHost();
  owner = human(service, 'owner');
  podId = await podWith(service, owner);
  agent = await installAgent(service, owner, podId, 'coder');
  const registered = await broker(service, 'mcp-broker');
  brokerToken = registered.token;
  const connection = await service.http
    .post('/api/connections')
    .set(owner.auth)
    .send({ kind: 'code_hosting_app', brokerId: registered.id, externalInstallationId: 'inst-mcp', tools: connectionTools() })
    .expect(201);
  connectionId = connection.body.id;
});
afterAll(async () => {
  await Promise.all(sessions.map((session) => session.close()));
  await codeHost.close();
  await service.close();
});

async function grant(options: Record<string, unknown>): Promise<string> {
  const created = await service.http
    .post('/api/grants')
    .set(owner.auth)
    .send({ connectionId, target: { kind: 'pod', id: podId }, ...options })
    .expect(201);
  return created.body.id;
}

/** An MCP session as an agent's host opens one: the broker process, started over stdio. */
async function mcpSession(grantId: string, brokerUrl = service.baseUrl): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [main],
    env: {
      PATH: process.env.PATH ?? '',
      GRANT_BROKER_URL: brokerUrl,
      BROKER_TOKEN: brokerToken,
      GRANT_ID: grantId,
      AGENT_TOKEN: agent.token,
      CONNECTOR_URL: codeHost.url,
      CONNECTOR_TOKEN: codeHost.token,
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  sessions.push(client);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;

it('an agent reads, is denied outside its grant, waits for a human, and runs out of budget', async () => {
  const grantId = await grant({
    tools: ['repos.read_file', 'issues.create_comment'],
    writeMode: 'approve',
    resources: { repositories: ['acme/*'] },
    budget: { calls: 3, windowMs: 60_000 },
  });
  const client = await mcpSession(grantId);

  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name).sort()).toEqual(['issues.create_comment', 'repos.read_file']);
  expect(tools.find((tool) => tool.name === 'issues.create_comment')?.description).toMatch(/human's approval/);

  const read = await call(client, 'repos.read_file', { repository: 'acme/api', path: 'README.md' });
  expect(read.isError).toBeFalsy();
  expect(JSON.parse(text(read))).toMatchObject({ content: '# acme api\n' });
  expect(codeHost.requests).toEqual([{ method: 'GET', path: '/repos/acme/api/contents/README.md' }]);

  const otherTool = await call(client, 'pulls.list', { repository: 'acme/api' });
  expect(otherTool).toMatchObject({
    isError: true,
    structuredContent: { reason: 'tool_not_allowed', explanation: { rule: 'broker.check.tool_not_allowed', unlock: expect.any(String) } },
  });
  expect(text(otherTool)).toMatch(/does not include that tool/);
  const otherRepo = await call(client, 'repos.read_file', { repository: 'other/secret', path: 'keys.txt' });
  expect(otherRepo).toMatchObject({ isError: true, structuredContent: { reason: 'resource_not_allowed' } });
  expect(codeHost.requests).toHaveLength(1);

  // A write waits for a human, who approves it with grantctl; the same call then goes through once.
  const comment = { repository: 'acme/api', issue: 7, body: 'LGTM' };
  const asked = await call(client, 'issues.create_comment', comment);
  expect(asked).toMatchObject({
    isError: true,
    structuredContent: { reason: 'approval_required', approvalId: expect.stringMatching(/^apr_/) },
  });
  expect(text(asked)).toMatch(/call this tool again with exactly the same arguments/);
  const approvalId = (asked.structuredContent as { approvalId: string }).approvalId;
  const stillPending = await call(client, 'issues.create_comment', comment);
  expect(stillPending).toMatchObject({ isError: true, structuredContent: { reason: 'approval_pending' } });
  expect(codeHost.comments).toEqual([]);

  const approved = await grantctl(['approvals', 'approve', approvalId, '--note', 'ok'], { url: service.baseUrl, token: owner.token });
  expect(approved).toMatchObject({ code: 0, stdout: expect.stringContaining(`${approvalId} approved by ${owner.userId}`) });
  const written = await call(client, 'issues.create_comment', comment);
  expect(written.isError).toBeFalsy();
  expect(codeHost.comments).toEqual([{ repository: 'acme/api', issue: 7, body: 'LGTM' }]);
  // The approval was for that one call: another body needs another approval.
  const another = await call(client, 'issues.create_comment', { ...comment, body: 'ship it' });
  expect(another).toMatchObject({ isError: true, structuredContent: { reason: 'approval_required' } });
  expect((another.structuredContent as { approvalId: string }).approvalId).not.toBe(approvalId);

  // Three calls in the window: the read and the approved write used two.
  expect((await call(client, 'repos.read_file', { repository: 'acme/api', path: 'README.md' })).isError).toBeFalsy();
  const exhausted = await call(client, 'repos.read_file', { repository: 'acme/api', path: 'README.md' });
  expect(exhausted).toMatchObject({
    isError: true,
    structuredContent: {
      reason: 'budget_exhausted',
      retryAfterMs: expect.any(Number),
      explanation: { unlock: 'wait', level: expect.any(Number) },
    },
  });
  expect(text(exhausted)).toMatch(/Retry after \d+ s/);
  expect(codeHost.requests.filter((r) => r.method === 'GET')).toHaveLength(2);

  // The call trail holds every one of them, and the broker reported the outcomes of the allowed
  // (in a batch after the agent had its answer: read once none is left pending).
  let trail = await service.http.get(`/api/grants/${grantId}/calls`).set(owner.auth).expect(200);
  for (let tries = 0; tries < 100 && trail.body.items.some((c: { outcome: string }) => c.outcome === 'pending'); tries += 1) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    trail = await service.http.get(`/api/grants/${grantId}/calls`).set(owner.auth).expect(200);
  }
  const outcomes = trail.body.items.map((c: { tool: string; outcome: string }) => `${c.tool}:${c.outcome}`).reverse();
  expect(outcomes).toEqual([
    'repos.read_file:succeeded',
    'pulls.list:denied',
    'repos.read_file:denied',
    // Held, then approved by the owner: the re-sent call is the one that succeeded.
    'issues.create_comment:approved',
    'issues.create_comment:denied',
    'issues.create_comment:succeeded',
    'issues.create_comment:awaiting_approval',
    'repos.read_file:succeeded',
    'repos.read_file:denied',
  ]);
});

it('a revoke cuts the agent off on its next call, and its tools disappear', async () => {
  const grantId = await grant({ tools: ['repos.read_file', 'pulls.list'] });
  const client = await mcpSession(grantId);
  expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['pulls.list', 'repos.read_file']);
  expect((await call(client, 'pulls.list', { repository: 'acme/api' })).isError).toBeFalsy();

  const revoked = await grantctl(['grants', 'revoke', grantId], { url: service.baseUrl, token: owner.token });
  expect(revoked.code).toBe(0);
  const before = codeHost.requests.length;
  const cut = await call(client, 'pulls.list', { repository: 'acme/api' });
  expect(cut).toMatchObject({ isError: true, structuredContent: { reason: 'revoked' } });
  expect(codeHost.requests).toHaveLength(before);
  expect((await client.listTools()).tools).toEqual([]);
});

it('fails closed when the grant broker cannot be reached: no call is made', async () => {
  const grantId = await grant({ tools: ['repos.read_file'] });
  const client = await mcpSession(grantId, 'http://127.0.0.1:9');
  const before = codeHost.requests.length;
  const result = await call(client, 'repos.read_file', { repository: 'acme/api', path: 'README.md' });
  expect(result).toMatchObject({ isError: true, structuredContent: { reason: 'broker_unavailable' } });
  expect(codeHost.requests).toHaveLength(before);
});

describe('arguments its schema forbids are refused before the check: nothing recorded, nothing sent', () => {
  let client: Client;
  let grantId: string;
  beforeAll(async () => {
    grantId = await grant({ tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'write' });
    client = await mcpSession(grantId);
  });
  const trail = async () => (await service.http.get(`/api/grants/${grantId}/calls`).set(owner.auth).expect(200)).body.items;

  it.each([
    ['a missing required argument', 'repos.read_file', { repository: 'acme/api' }, /required property 'path'/],
    [
      'a property the schema does not have',
      'repos.read_file',
      { repository: 'acme/api', path: 'README.md', token: 'SENTINEL-1' },
      /additional properties/,
    ],
    [
      'a string where an integer belongs',
      'issues.create_comment',
      { repository: 'acme/api', issue: 'SENTINEL-2', body: 'hi' },
      /issue must be integer/,
    ],
    [
      'an issue number past the safe integers',
      'issues.create_comment',
      { repository: 'acme/api', issue: 2 ** 60, body: 'hi' },
      /issue must be <=/,
    ],
    [
      'a repository that is not owner/name',
      'repos.read_file',
      { repository: 'SENTINEL-3', path: 'README.md' },
      /repository must match pattern/,
    ],
  ])('%s', async (_case, name, args, problem) => {
    const [requestsBefore, recordedBefore] = [codeHost.requests.length, (await trail()).length];
    const result = await call(client, name, args);
    expect(result).toMatchObject({ isError: true, structuredContent: { reason: 'invalid_arguments' } });
    expect(text(result)).toMatch(problem);
    // It names the property and the rule, never the value the model sent.
    expect(text(result)).not.toMatch(/SENTINEL/);
    expect(codeHost.requests).toHaveLength(requestsBefore);
    expect(await trail()).toHaveLength(recordedBefore);
  });
});
