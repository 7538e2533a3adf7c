import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitationCompleteNotificationSchema,
  ErrorCode,
  UrlElicitationRequiredError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { publicBaseUrl } from '../../src/config';
import { APPROVAL_ARGS as ARGS, approvalGateway, type ApprovalGateway } from './support/approval-gateway';
import { call, GATEWAY_MAIN, httpAgent, text, trail } from './support/gateway-world';

/**
 * Approvals in band (CONTRACT §20, MCP 2025-11-25 URL mode elicitation), with the SDK's own Client
 * against a real service, the gateway and server-everything: a host that declared URL elicitation
 * is answered -32042 naming the approval's console page, told `notifications/elicitation/complete`
 * once a person decided, and its retry runs once; a denied approval's retry is refused
 * `approval_denied` and never reaches the upstream. A host that did not declare it gets the tool error with the approval and its page.
 */
jest.setTimeout(60_000);

let suite: ApprovalGateway;
let world: ApprovalGateway['world'];

beforeAll(async () => {
  suite = await approvalGateway();
  world = suite.world;
});
afterAll(() => suite?.close());

/** A host as the SDK's Client that declares URL elicitation, and the elicitations it was told are complete. */
async function elicitingHost(grantId: string) {
  const transport = new StreamableHTTPClientTransport(new URL(suite.gateway.url), {
    requestInit: { headers: { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId } },
  });
  const client = new Client({ name: 'eliciting-host', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
  const completed: string[] = [];
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
    completed.push(notification.params.elicitationId);
  });
  await client.connect(transport);
  suite.open.push(client);
  return { client, completed };
}

/** The -32042 a call was answered with (anything else fails the test). */
async function elicitationOf(client: Client): Promise<UrlElicitationRequiredError> {
  const error = await call(client, 'get-annotated-message', ARGS).then(
    (result) => new Error(`expected -32042, got a result: ${JSON.stringify(result)}`),
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof UrlElicitationRequiredError)) throw error;
  return error;
}

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const decide = (approvalId: string, how: 'approve' | 'deny') =>
  world.service.http.post(`/api/approvals/${approvalId}/${how}`).set(world.owner.auth).send({ note: 'decided' }).expect(200);
const approvalOf = async (approvalId: string) =>
  (await world.service.http.get(`/api/approvals/${approvalId}`).set(world.owner.auth).expect(200)).body as { state: string };
/** Where the service says its console is (PUBLIC_URL, or its own address). */
const pageOf = (approvalId: string) => `${publicBaseUrl(world.service.config)}/console/approvals/${approvalId}`;
const reasonOf = (result: CallToolResult) => (result.structuredContent as { reason?: string } | undefined)?.reason ?? 'ok';
const callsUpstream = () => suite.upstream.calls.filter((made) => made.name === 'get-annotated-message').length;

it('asks a host that declared URL elicitation to open the approval page; approved, its retry runs once', async () => {
  const grantId = await suite.approvalGrant();
  const { client, completed } = await elicitingHost(grantId);
  const before = callsUpstream();

  const asked = await elicitationOf(client);
  expect(asked.code).toBe(ErrorCode.UrlElicitationRequired);
  expect(asked.elicitations).toHaveLength(1);
  const [elicitation] = asked.elicitations;
  const approvalId = elicitation!.elicitationId;
  expect(approvalId).toMatch(/^apr_/);
  expect(elicitation).toMatchObject({ mode: 'url', url: pageOf(approvalId) });
  // Nothing of the call (its arguments, a token) rides in the URL or the message.
  expect(JSON.stringify(asked.elicitations)).not.toMatch(/success|art_|bkt_/);
  expect(await approvalOf(approvalId)).toMatchObject({ state: 'pending' });

  // Retried before anyone decided: the same page again (the call still waits for it), nothing sent upstream.
  const early = await elicitationOf(client);
  expect(early.elicitations).toEqual(asked.elicitations);
  expect(completed).toEqual([]);

  await decide(approvalId, 'approve');
  await until(() => completed.includes(approvalId));
  const allowed = await call(client, 'get-annotated-message', ARGS);
  expect(allowed.isError).toBeFalsy();
  expect(callsUpstream()).toBe(before + 1);
  expect(await approvalOf(approvalId)).toMatchObject({ state: 'used' });

  // The same call replayed: the approval was used, so a person is asked afresh, for a new approval.
  const replayed = await elicitationOf(client);
  expect(replayed.elicitations[0]!.elicitationId).not.toBe(approvalId);
  expect(callsUpstream()).toBe(before + 1);
  const { items } = await trail(world, grantId);
  expect(items.map((item) => `${item.outcome}:${item.reason}`)).toEqual([
    'approved:approval_required',
    'denied:approval_pending',
    'succeeded:allowed',
    'awaiting_approval:approval_required',
  ]);
});

it('a denied approval: the host is told it is decided, its retry is refused approval_denied, and nothing reaches the upstream', async () => {
  const grantId = await suite.approvalGrant();
  const { client, completed } = await elicitingHost(grantId);
  const before = callsUpstream();
  const approvalId = (await elicitationOf(client)).elicitations[0]!.elicitationId;
  await decide(approvalId, 'deny');
  await until(() => completed.includes(approvalId));
  expect(await approvalOf(approvalId)).toMatchObject({ state: 'denied' });

  // The retry the notification prompts is told the answer, not asked about again at once.
  const retried = await call(client, 'get-annotated-message', ARGS);
  expect(retried.isError).toBe(true);
  expect(reasonOf(retried)).toBe('approval_denied');
  expect(text(retried)).toMatch(/refused to approve/);
  // Once: calling it again is a new request a person may decide otherwise.
  const again = await elicitationOf(client);
  expect(again.elicitations[0]!.elicitationId).not.toBe(approvalId);
  expect(callsUpstream()).toBe(before);
  const { items } = await trail(world, grantId);
  // The held call reads as its approval ended (denied); the retry's own record says why it was refused.
  expect(items.map((item) => `${item.outcome}:${item.reason}`)).toEqual([
    'denied:approval_denied',
    'denied:approval_denied',
    'awaiting_approval:approval_required',
  ]);
});

it('a host that did not declare URL elicitation gets the tool error with the approval and its console page', async () => {
  const grantId = await suite.approvalGrant();
  const client = await httpAgent(suite.gateway.url, world.agent.token, grantId);
  suite.open.push(client);
  const before = callsUpstream();
  const asked = await call(client, 'get-annotated-message', ARGS);
  expect(asked.isError).toBe(true);
  const detail = asked.structuredContent as { reason: string; approvalId: string; consoleUrl: string };
  expect(detail).toMatchObject({ reason: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });
  expect(detail.consoleUrl).toBe(pageOf(detail.approvalId));
  expect(text(asked)).toContain(detail.consoleUrl);

  await decide(detail.approvalId, 'approve');
  expect((await call(client, 'get-annotated-message', ARGS)).isError).toBeFalsy();
  expect(reasonOf(await call(client, 'get-annotated-message', ARGS))).toBe('approval_required');
  expect(callsUpstream()).toBe(before + 1);
});

it('a host that declared only form elicitation is not sent a URL elicitation', async () => {
  const grantId = await suite.approvalGrant();
  const transport = new StreamableHTTPClientTransport(new URL(suite.gateway.url), {
    requestInit: { headers: { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId } },
  });
  const client = new Client({ name: 'form-host', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  await client.connect(transport);
  suite.open.push(client);
  expect(reasonOf(await call(client, 'get-annotated-message', ARGS))).toBe('approval_required');
});

it('over stdio (the gateway a host starts itself): asked in band, told once decided, its retry runs once', async () => {
  const grantId = await suite.approvalGrant();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GATEWAY_MAIN, '--config', suite.configFile],
    env: { PATH: process.env.PATH ?? '', GATEWAY_BROKER_TOKEN: world.brokerToken, GRANT_ID: grantId, AGENT_TOKEN: world.agent.token },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-host', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
  const completed: string[] = [];
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
    completed.push(notification.params.elicitationId);
  });
  await client.connect(transport);
  suite.open.push(client);

  const [elicitation] = (await elicitationOf(client)).elicitations;
  expect(elicitation).toMatchObject({ mode: 'url', url: pageOf(elicitation!.elicitationId) });
  await decide(elicitation!.elicitationId, 'approve');
  await until(() => completed.includes(elicitation!.elicitationId));
  expect((await call(client, 'get-annotated-message', ARGS)).isError).toBeFalsy();
  expect((await elicitationOf(client)).elicitations[0]!.elicitationId).not.toBe(elicitation!.elicitationId);
});
