import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { Agent } from 'undici';

/** Longer than a call takes between two calls at any rate worth pooling for; idle sockets close after it. */
const KEEP_ALIVE_MS = 30_000;
/** Sockets to the upstream: calls in flight beyond it wait for one rather than opening more. */
const CONNECTIONS = 32;

/**
 * The `fetch` the MCP SDK's streamable HTTP client is given for an upstream MCP server: its POSTs
 * (each a JSON-RPC message, a string body) sent with undici's `request` on a kept-alive pool, the
 * answer handed back as a `Response` whose body streams as it arrives (an SSE answer is read event
 * by event, as the platform's would be). The platform's `fetch` runs the whole WHATWG fetch
 * algorithm per call (a second Request, the body as a stream written chunk by chunk), which cost
 * the gateway more CPU than the rest of the upstream call. Anything else (the session's GET
 * stream, its DELETE) goes through the platform's `fetch` unchanged.
 */
export function upstreamFetch(): { fetch: typeof fetch; close: () => Promise<void> } {
  const agent = new Agent({ connections: CONNECTIONS, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS, pipelining: 1 });
  const send: typeof fetch = async (input, init) => {
    if (init?.method !== 'POST' || typeof init.body !== 'string' || input instanceof Request) return fetch(input, init);
    const url = new URL(String(input));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const answer = await agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers,
      body: init.body,
      signal: init.signal ?? undefined,
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const each of Array.isArray(value) ? value : [value]) responseHeaders.append(name, each);
    }
    // A body is not allowed with these statuses in a Response.
    if ([101, 204, 205, 304].includes(answer.statusCode)) {
      answer.body.resume();
      return new Response(null, { status: answer.statusCode, headers: responseHeaders });
    }
    const body = Readable.toWeb(answer.body) as WebReadableStream<Uint8Array> as ReadableStream<Uint8Array>;
    return new Response(body, { status: answer.statusCode, headers: responseHeaders });
  };
  // Whatever is still open when the gateway stops (an answer its reader abandoned) is cut, not waited for.
  return { fetch: send, close: () => agent.destroy() };
}
