import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, SUPPORTED_PROTOCOL_VERSIONS, type CallToolRequest, type ListToolsRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestAuth, SessionHandlers } from './agent-session';

/** What the SDK's transport is then given: the body this path read, or nothing (it reads the request itself). */
export type Declined = { parsedBody?: unknown };

/** What the listener verified of the request, for the handlers, and the answer it may put in place of theirs. */
export interface HotAuth {
  /** The request's own credential (the SDK's `authInfo`): its token, and over OAuth the grant's end. */
  auth?: RequestAuth;
  /** Checked once the handler has run: an answer to send instead (the 401 of a token whose grant ended), as ./answer-instead.ts does for the SDK's transport. */
  instead?: () => (() => void) | undefined;
}

/**
 * `tools/call` and `tools/list` of an established session, answered over Node's HTTP objects
 * directly: the body read once, parsed once, the session's handler called and its JSON answer
 * written. The MCP SDK's streamable HTTP transport turns each request into a web `Request` and
 * its answer into a web `Response` (streams both ways), then routes the message through its
 * protocol layer, and that per-request machinery cost the gateway more CPU than the checked call.
 *
 * It answers exactly as the SDK's transport does in JSON-response mode (the same status codes,
 * headers and JSON-RPC envelopes), and only what it is sure of: anything else (another method, a
 * notification, a batch, a header the SDK would refuse, params of another shape, a task-augmented
 * call) is declined and handed to the SDK's transport, with the body if it was already read.
 */
export async function answerHot(
  request: IncomingMessage,
  response: ServerResponse,
  sessionId: string,
  handlers: SessionHandlers,
  maxBodyBytes: number,
  hot: HotAuth = {},
): Promise<Declined | undefined> {
  // A declared length past the bound is the SDK's 413, before a byte is read.
  if (!headersAccepted(request) || Number(request.headers['content-length'] ?? 0) > maxBodyBytes) return {};
  const text = await bodyOf(request, maxBodyBytes);
  if (text === undefined)
    return void jsonRpcError(response, 413, -32000, `Payload Too Large: Request body must not exceed ${maxBodyBytes} bytes`);
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return void jsonRpcError(response, 400, -32700, 'Parse error: Invalid JSON');
  }
  return answerParsed(request, response, sessionId, handlers, message, hot);
}

/**
 * The same, for a body the listener has already read and parsed (./mcp-body.ts, which holds the
 * `Mcp-Method` and `Mcp-Name` headers to it and answers a body it cannot take itself).
 */
export async function answerHotParsed(
  request: IncomingMessage,
  response: ServerResponse,
  sessionId: string,
  handlers: SessionHandlers,
  message: unknown,
  hot: HotAuth = {},
): Promise<Declined | undefined> {
  if (!headersAccepted(request)) return { parsedBody: message };
  return answerParsed(request, response, sessionId, handlers, message, hot);
}

async function answerParsed(
  request: IncomingMessage,
  response: ServerResponse,
  sessionId: string,
  handlers: SessionHandlers,
  message: unknown,
  { auth, instead }: HotAuth,
): Promise<Declined | undefined> {
  const call = hotRequest(message);
  if (!call) return { parsedBody: message };

  let answer: object;
  try {
    const result =
      call.method === 'tools/call'
        ? await handlers.callTool(call.request, request.headers, auth)
        : await handlers.listTools(call.request, request.headers, auth);
    answer = { result, jsonrpc: '2.0', id: call.id };
  } catch (error) {
    // As the SDK's protocol layer answers a handler that threw.
    // (An approval asked in band is one: URL elicitation's -32042, its data naming the page.)
    const { code, message: text, data } = error as { code?: unknown; message?: unknown; data?: unknown };
    answer = {
      jsonrpc: '2.0',
      id: call.id,
      error: {
        code: Number.isSafeInteger(code) ? code : ErrorCode.InternalError,
        message: typeof text === 'string' ? text : 'Internal error',
        ...(data !== undefined ? { data } : {}),
      },
    };
  }
  const replacement = instead?.();
  if (replacement) return void replacement();
  const body = JSON.stringify(answer);
  response.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId, 'content-length': Buffer.byteLength(body) });
  response.end(body);
  return undefined;
}

/** The method, media types and protocol version the SDK's transport takes (anything else is its to refuse). */
function headersAccepted(request: IncomingMessage): boolean {
  if (request.method !== 'POST' || !acceptsBoth(request.headers.accept) || !isJson(request.headers['content-type'])) return false;
  const version = request.headers['mcp-protocol-version'];
  return version === undefined || (typeof version === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(version));
}

type HotRequest = { id: string | number } & (
  { method: 'tools/call'; request: CallToolRequest } | { method: 'tools/list'; request: ListToolsRequest }
);

/** The message if it is one request this path answers, its params of exactly the shape the SDK's schema takes. */
function hotRequest(message: unknown): HotRequest | undefined {
  if (!isRecord(message) || message.jsonrpc !== '2.0') return undefined;
  const { id, method, params } = message;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return undefined;
  if (params !== undefined && !isRecord(params)) return undefined;
  if (params?._meta !== undefined && !plainMeta(params._meta)) return undefined;
  if (method === 'tools/list') {
    if (params?.cursor !== undefined && typeof params.cursor !== 'string') return undefined;
    return { id, method, request: { method, params } as ListToolsRequest };
  }
  if (method !== 'tools/call' || !params) return undefined;
  if (typeof params.name !== 'string' || params.task !== undefined) return undefined;
  if (params.arguments !== undefined && !isRecord(params.arguments)) return undefined;
  return { id, method, request: { method, params } as CallToolRequest };
}

/** `_meta` with nothing the SDK's schema would check or act on (a progress token, a task). */
function plainMeta(meta: unknown): boolean {
  return isRecord(meta) && meta.progressToken === undefined && meta['io.modelcontextprotocol/related-task'] === undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The client must accept both (a substring check of the list, as the SDK's). */
function acceptsBoth(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes('application/json') && accept.includes('text/event-stream');
}

/** Only the plain forms: anything else is left to the SDK's own media type parsing. */
function isJson(contentType: string | undefined): boolean {
  return contentType === 'application/json' || contentType?.toLowerCase().replace(/\s+/g, '') === 'application/json;charset=utf-8';
}

/** The body as UTF-8 text, or undefined past `maxBytes` (the rest is not read). */
function bodyOf(request: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= maxBytes) return void chunks.push(chunk);
      request.off('data', onData);
      request.pause();
      resolve(undefined);
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.once('error', reject);
  });
}

function jsonRpcError(response: ServerResponse, status: number, code: number, message: string): void {
  // A body left unread is not drained: the connection closes with the answer.
  if (status === 413) response.setHeader('connection', 'close');
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
