import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpUpstream } from '../../gateway/src/upstream/mcp';

/**
 * An HTTP upstream's answers to tool calls are read by the gateway itself (gateway/src/upstream/http-call.ts):
 * the response found in the stream (or JSON answer) and its result checked once; events of another
 * type skipped, the other messages handed to the SDK's client. A hand-written upstream answers each
 * tool with another shape.
 */
let server: Server;
let upstream: McpUpstream;
const open = new Set<ServerResponse>();

/** The SSE answer of each tool: its events, and whether the stream stays open after them. */
const shapes: Record<string, { events: (id: unknown) => string[]; keepOpen?: boolean }> = {
  // A priming event (an id, no data), a notification, then the response.
  plain: {
    events: (id) => [
      'id: 1\ndata: \n\n',
      `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`,
      `id: 2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'plain' }] } })}\n\n`,
    ],
  },
  // An event of another type before the response: skipped, as the SDK skips it.
  typed: {
    events: (id) => [
      'event: custom\ndata: {"whatever": true}\n\n',
      `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'typed' }] } })}\n\n`,
    ],
  },
  // Split across lines and chunks, CRLF line ends.
  split: {
    events: (id) => {
      const text = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'split' }] } });
      return [`data: ${text.slice(0, 10)}`, `${text.slice(10)}\r\n`, '\r\n'];
    },
  },
  // The stream is left open after the response: the call is answered anyway.
  lingering: {
    events: (id) => [`data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'lingering' }] } })}\n\n`],
    keepOpen: true,
  },
  // Not a tool result: the SDK's schema still refuses it.
  invalid: { events: (id) => [`data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { content: 'not a list' } })}\n\n`] },
  // A JSON-RPC error: the upstream's own refusal, its code only.
  refused: { events: (id) => [`data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: 'no such thing' } })}\n\n`] },
  // The stream ends before the response: the call fails at once rather than at its deadline.
  cut: {
    events: () => [
      `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } })}\n\n`,
    ],
  },
};

/** The request whose stream the server ended after a priming event: answered on the GET that resumes it. */
let toResume: unknown;

async function handle(request: IncomingMessage, response: ServerResponse) {
  if (request.method === 'GET' && request.headers['last-event-id'] === 'resume-1' && toResume !== undefined) {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const answer = { jsonrpc: '2.0', id: toResume, result: { content: [{ type: 'text', text: 'resumed' }] } };
    return void response.end(`id: resume-2\ndata: ${JSON.stringify(answer)}\n\n`);
  }
  if (request.method !== 'POST') return void response.writeHead(405).end();
  let text = '';
  for await (const chunk of request) text += String(chunk);
  const message = JSON.parse(text) as { id?: unknown; method: string; params?: { name?: string } };
  if (message.id === undefined) return void response.writeHead(202).end();
  if (message.method === 'initialize') {
    const result = { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'sse', version: '1' } };
    response.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' });
    return void response.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
  }
  if (message.params?.name === 'json') {
    // A plain JSON answer (no stream) holding the response among other messages.
    const notification = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'json' } };
    const answer = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'json' }] } };
    response.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' });
    return void response.end(JSON.stringify([notification, answer]));
  }
  if (message.params?.name === 'resumed') {
    // A priming event, then the stream ends: the client is to resume it from that event's id.
    toResume = message.id;
    response.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'session-1' });
    return void response.end('id: resume-1\ndata: \n\n');
  }
  const shape = shapes[message.params?.name ?? ''] ?? shapes.plain!;
  response.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'session-1' });
  for (const event of shape.events(message.id)) {
    response.write(event);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (shape.keepOpen) open.add(response);
  else response.end();
}

beforeAll(async () => {
  server = createServer((request, response) => void handle(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream = new McpUpstream({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` }, 5_000);
});
afterAll(async () => {
  await upstream.close();
  for (const response of open) response.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

it.each(['plain', 'typed', 'split', 'lingering', 'json', 'resumed'])('answers a call whose SSE answer is %s', async (name) => {
  const result = await upstream.callTool(name, {});
  expect(result.content).toEqual([{ type: 'text', text: name }]);
});

it('keeps answering after a stream left open, and refuses an answer that is not a tool result', async () => {
  await expect(upstream.callTool('lingering', {})).resolves.toMatchObject({ content: [{ text: 'lingering' }] });
  await expect(upstream.callTool('invalid', {})).rejects.toMatchObject({ code: 'upstream_invalid_answer' });
  await expect(upstream.callTool('plain', {})).resolves.toMatchObject({ content: [{ text: 'plain' }] });
});

it('fails a call the upstream refused, or whose stream ended without its response, and keeps answering', async () => {
  await expect(upstream.callTool('refused', {})).rejects.toMatchObject({
    code: 'upstream_error',
    message: expect.stringContaining('-32602'),
  });
  const started = Date.now();
  await expect(upstream.callTool('cut', {})).rejects.toMatchObject({ code: 'upstream_closed' });
  expect(Date.now() - started).toBeLessThan(2_000);
  await expect(upstream.callTool('plain', {})).resolves.toMatchObject({ content: [{ text: 'plain' }] });
});
