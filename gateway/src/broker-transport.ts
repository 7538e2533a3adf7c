import { Agent } from 'undici';
import { injectTraceContext } from './tracing';

/** Longer than a check takes, shorter than the service's own keep-alive (so it never closes a socket we are about to use). */
const KEEP_ALIVE_MS = 30_000;
/** Sockets per origin: enough for a burst of checks; a burst past it waits for one rather than opening more. */
const CONNECTIONS = 16;

/**
 * The gateway's `fetch` to the grant broker: each exchange on a kept-alive socket of one bounded
 * pool (undici's `request`), and the answer handed back as a `Response` for the typed client.
 * Cheaper per call than the platform's `fetch`, whose WHATWG machinery (a second Request, body
 * streams, its fetch algorithm) cost more CPU than the check's HTTP itself, and which opens a new
 * socket for every request of a burst and drops them idle.
 */
export function keptAliveFetch(): { fetch: typeof fetch; close: () => Promise<void> } {
  const agent = new Agent({ connections: CONNECTIONS, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS, pipelining: 1 });
  const send: typeof fetch = async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const signal = init?.signal ?? request.signal;
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    // The check continues the call's trace in the service.
    injectTraceContext(headers);
    const answer = await agent.request({
      origin: new URL(request.url).origin,
      path: request.url.slice(new URL(request.url).origin.length),
      method: request.method as 'GET',
      headers,
      body,
      signal: signal ?? undefined,
    });
    const bytes = await answer.body.arrayBuffer();
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const each of Array.isArray(value) ? value : [value]) responseHeaders.append(name, each);
    }
    // A body is not allowed with these statuses in a Response.
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    return new Response(empty ? null : bytes, { status: answer.statusCode, headers: responseHeaders });
  };
  return { fetch: send, close: () => agent.close() };
}
