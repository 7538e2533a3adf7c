import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  configFor,
  connectionFor,
  EVERYTHING,
  gatewayWorld,
  grantOn,
  httpAgent,
  startHttpGateway,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * An established session's tools/call and tools/list are answered without the SDK's transport
 * (gateway/src/hot-path.ts). What an agent sees must not change: the same answers as the SDK's
 * transport gives, and every request the hot path is not sure of (odd headers, broken or oversized
 * bodies, batches, notifications, other methods, params of another shape) answered as the SDK
 * answers it. Which path answered is told by the SDK's transport itself: a request it handles
 * went through its `handleRequest` (watched, not replaced).
 */
let world: GatewayWorld;
let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
let grantId: string;
let sessionId: string;
let closeAgent: () => Promise<void>;
const sdkTransport = jest.spyOn(StreamableHTTPServerTransport.prototype, 'handleRequest');

/** Whether the SDK's transport handled the request marked with this `Test-Probe` header. */
const handledBySdk = (probe: string) => sdkTransport.mock.calls.some(([request]) => request.headers['test-probe'] === probe);

beforeAll(async () => {
  world = await gatewayWorld();
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  const connectionId = await connectionFor(world, config);
  grantId = await grantOn(world, connectionId, { tools: ['everything.echo'] });
  gateway = await startHttpGateway(world, config);
  const agent = await httpAgent(gateway.url, world.agent.token, grantId);
  sessionId = (agent.transport as { sessionId?: string }).sessionId!;
  closeAgent = () => agent.close();
});
afterAll(async () => {
  await closeAgent();
  await gateway.close();
  await world.service.close();
});

interface Answer {
  status: number;
  /** The SDK's transport took part in the answer (else the hot path, or the listener before either, answered). */
  viaSdk: boolean;
  headers: Record<string, unknown>;
  body: string;
}

/** A raw POST to the session, with the agent's headers unless `headers` replaces them. */
function post(body: string | Buffer, headers: Record<string, string | string[] | undefined> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(gateway.url);
    const probe = randomUUID();
    const all: Record<string, string | string[]> = { 'Test-Probe': probe };
    const given = {
      Authorization: `Bearer ${world.agent.token}`,
      'Grant-Id': grantId,
      'Mcp-Session-Id': sessionId,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': '2025-06-18',
      ...headers,
    };
    for (const [name, value] of Object.entries(given)) if (value !== undefined) all[name] = value;
    const req = httpRequest({ host: url.hostname, port: url.port, path: '/mcp', method: 'POST', headers: all }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text, viaSdk: handledBySdk(probe) }));
    });
    // The gateway may answer (413) and close before the whole body is written.
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    req.end(body);
  });
}

const message = (id: number | string, method: string, params?: unknown) => ({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
const json = (answer: Answer) => JSON.parse(answer.body) as Record<string, unknown>;

it('answers tools/list and tools/call as the SDK transport does: the same JSON-RPC answer, the session named', async () => {
  const hot = await post(JSON.stringify(message(7, 'tools/list', {})));
  expect(hot.viaSdk).toBe(false);
  expect(hot.status).toBe(200);
  expect(hot.headers['content-type']).toBe('application/json');
  expect(hot.headers['mcp-session-id']).toBe(sessionId);
  // A batch (of one) goes through the SDK's transport, which answers a batch of one with the answer alone.
  const sdk = await post(JSON.stringify([message(8, 'tools/list', {})]));
  expect(sdk.viaSdk).toBe(true);
  expect(sdk.status).toBe(200);
  const fromSdk = json(sdk);
  expect(json(hot)).toEqual({ ...fromSdk, id: 7 });
  expect((json(hot).result as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['echo']);

  const call = await post(JSON.stringify(message('call-1', 'tools/call', { name: 'echo', arguments: { message: 'hi' } })));
  expect(call.viaSdk).toBe(false);
  expect(call.status).toBe(200);
  expect(json(call)).toEqual({ jsonrpc: '2.0', id: 'call-1', result: { content: [{ type: 'text', text: 'Echo: hi' }] } });
  // A tool the gateway does not have is a tool error, as through the SDK.
  const unknown = json(await post(JSON.stringify(message(9, 'tools/call', { name: 'nope', arguments: {} }))));
  expect(unknown).toMatchObject({ id: 9, result: { isError: true, structuredContent: { reason: 'unknown_tool' } } });
});

it("leaves to the SDK's transport what it is not sure of, which answers as it always has", async () => {
  const list = JSON.stringify(message(1, 'tools/list', {}));
  // Headers the SDK refuses.
  expect((await post(list, { Accept: 'application/json' })).status).toBe(406);
  expect((await post(list, { 'Content-Type': 'text/plain' })).status).toBe(415);
  expect((await post(list, { 'Content-Type': 'text/plain; a=application/json' })).status).toBe(415);
  const badVersion = await post(list, { 'Mcp-Protocol-Version': '1999-01-01' });
  expect(badVersion.status).toBe(400);
  expect(badVersion.body).toContain('Unsupported protocol version');
  // A Content-Type with parameters, and no protocol version header: accepted.
  expect((await post(list, { 'Content-Type': 'Application/JSON; charset=UTF-8', 'Mcp-Protocol-Version': undefined })).status).toBe(200);
  // A notification: 202, no body.
  const notification = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }));
  expect(notification.status).toBe(202);
  // Another method: the SDK's method-not-found.
  expect(json(await post(JSON.stringify(message(2, 'resources/list', {}))))).toMatchObject({ id: 2, error: { code: -32601 } });
  // tools/call whose params are not the schema's: the SDK's error answer (its schema's), never the tool.
  for (const params of [{ name: 42 }, { name: 'echo', arguments: 'text' }, { name: 'echo', arguments: [] }, undefined]) {
    const answer = json(await post(JSON.stringify(message(3, 'tools/call', params))));
    expect(answer).toMatchObject({ id: 3, error: { code: -32603 } });
    expect(answer.result).toBeUndefined();
  }
  // Not JSON-RPC at all.
  const notRpc = await post(JSON.stringify({ id: 4, method: 'tools/list' }));
  expect(notRpc.status).toBe(400);
  expect(json(notRpc)).toMatchObject({ error: { code: -32700 } });
});

it('refuses a broken or oversized body as the SDK does, and keeps answering after it', async () => {
  const broken = await post('{"jsonrpc": "2.0", "id": 1, "method": "tools/li');
  expect(broken.status).toBe(400);
  expect(json(broken)).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null });
  // Past 1 MiB, declared or not: 413.
  const huge = JSON.stringify(message(5, 'tools/call', { name: 'echo', arguments: { message: 'x'.repeat(1024 * 1024) } }));
  const declared = await post(huge);
  expect(declared.status).toBe(413);
  const chunked = await post(huge, { 'Transfer-Encoding': 'chunked' });
  expect(chunked.status).toBe(413);
  expect(json(chunked)).toMatchObject({ error: { code: -32000, message: expect.stringContaining('Payload Too Large') } });
  // Hostile text in an argument goes to the tool as text, and back.
  const hostile = await post(JSON.stringify(message(6, 'tools/call', { name: 'echo', arguments: { message: '\u0000<b>..\ud800' } })));
  expect(hostile.status).toBe(200);
  expect(json(hostile)).toMatchObject({ id: 6, result: { content: [{ type: 'text' }] } });
  expect((await post(JSON.stringify(message(7, 'tools/list', {})))).status).toBe(200);
});

describe('Mcp-Method and Mcp-Name headers (held to the body, ./mcp-body.ts)', () => {
  const echo = (id: number) => message(id, 'tools/call', { name: 'echo', arguments: { message: 'named' } });
  const named = { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'echo' };

  it('that agree with the body: answered on the hot path, exactly as the SDK answers the same request in a batch', async () => {
    const hot = await post(JSON.stringify(echo(11)), named);
    expect(hot.viaSdk).toBe(false);
    const sdk = await post(JSON.stringify([echo(11)]), named);
    expect(sdk.viaSdk).toBe(true);
    expect(hot.status).toBe(200);
    expect(hot.status).toBe(sdk.status);
    expect(json(hot)).toEqual(json(sdk));
    expect(json(hot)).toMatchObject({ id: 11, result: { content: [{ type: 'text', text: 'Echo: named' }] } });
    expect(hot.headers['mcp-session-id']).toBe(sessionId);
    expect(hot.headers['content-type']).toBe(sdk.headers['content-type']);

    const list = await post(JSON.stringify(message(12, 'tools/list', {})), { 'Mcp-Method': 'tools/list' });
    expect(list.viaSdk).toBe(false);
    expect(json(list)).toMatchObject({ id: 12, result: { tools: [{ name: 'echo' }] } });
    // A method the hot path does not answer, its header agreeing: the SDK's transport, with the body already read.
    const ping = await post(JSON.stringify(message(13, 'ping')), { 'Mcp-Method': 'ping' });
    expect(ping.viaSdk).toBe(true);
    expect(json(ping)).toEqual({ jsonrpc: '2.0', id: 13, result: {} });
  });

  it('that disagree, or hostile values: 400 header_mismatch before either path, the value never echoed', async () => {
    const hostile: Record<string, string | string[]>[] = [
      { 'Mcp-Method': 'tools/list', 'Mcp-Name': 'echo' },
      { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'ECHO' },
      { 'Mcp-Name': '' },
      { 'Mcp-Method': '' },
      // Sent twice: Node joins the two into one value ("echo, echo"), which names no tool.
      { 'Mcp-Name': ['echo', 'echo'] },
      { 'Mcp-Method': ['tools/call', 'tools/call'] },
      { 'Mcp-Name': '\u00e9ch\u00f6<script>' },
      { 'Mcp-Name': `echo${'x'.repeat(6000)}` },
      { 'Mcp-Name': 'echo\tbad' },
    ];
    for (const headers of hostile) {
      const answer = await post(JSON.stringify(echo(14)), headers);
      expect([headers, answer.status, answer.viaSdk]).toEqual([headers, 400, false]);
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(json(answer)).toMatchObject({ status: 400, code: 'header_mismatch' });
      expect(answer.body).not.toMatch(/ECHO|script|xxxx|bad/);
    }
    // A batch is held to them message by message.
    const batch = await post(JSON.stringify([echo(15), message(16, 'tools/list', {})]), named);
    expect([batch.status, batch.viaSdk]).toEqual([400, false]);
    // Nothing was called: the session answers on.
    expect((await post(JSON.stringify(echo(17)), named)).status).toBe(200);
  });
});
