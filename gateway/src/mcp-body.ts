import type { IncomingMessage } from 'node:http';

/** What the body of a `POST /mcp` turned out to be. */
export type McpBody =
  { ok: true; message: unknown } | { ok: false; status: 400 | 413; code: 'parse_error' | 'header_mismatch' | 'too_large'; detail: string };

/**
 * The JSON-RPC body of a `POST /mcp`, read (at most `maxBytes`) and parsed here so that the
 * request's `Mcp-Method` and `Mcp-Name` headers, where a host sends them, can be held to it: a
 * header that disagrees with the body is a 400. Only the body is ever acted on; a header can
 * refuse a request, never route or allow one.
 */
export async function readMcpBody(request: IncomingMessage, maxBytes: number): Promise<McpBody> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > maxBytes) return { ok: false, status: 413, code: 'too_large', detail: `the body is at most ${maxBytes} bytes` };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return { ok: false, status: 413, code: 'too_large', detail: `the body is at most ${maxBytes} bytes` };
    chunks.push(chunk);
  }
  let message: unknown;
  try {
    message = JSON.parse(Buffer.concat(chunks, size).toString('utf8'));
  } catch {
    return { ok: false, status: 400, code: 'parse_error', detail: 'the body is not JSON' };
  }
  const disagreement = headerDisagreement(request, message);
  if (disagreement) return { ok: false, status: 400, code: 'header_mismatch', detail: disagreement };
  return { ok: true, message };
}

/** What a message's `Mcp-Name` would name: the tool or prompt's `name`, or the resource's `uri`. */
function nameOf(message: Record<string, unknown>): unknown {
  const params = message.params;
  if (typeof params !== 'object' || params === null) return undefined;
  const { name, uri } = params as { name?: unknown; uri?: unknown };
  return name ?? uri;
}

function headerDisagreement(request: IncomingMessage, body: unknown): string | undefined {
  const method = request.headers['mcp-method'];
  const name = request.headers['mcp-name'];
  if (method === undefined && name === undefined) return undefined;
  const messages = Array.isArray(body) ? body : [body];
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) return 'the Mcp-Method and Mcp-Name headers name no message of the body';
    const record = message as Record<string, unknown>;
    if (method !== undefined && record.method !== method) return 'the Mcp-Method header disagrees with the method of the body';
    if (name !== undefined && nameOf(record) !== name) return 'the Mcp-Name header disagrees with the name of the body';
  }
  return undefined;
}
