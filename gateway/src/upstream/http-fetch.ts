import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';
import { Agent, type Dispatcher } from 'undici';
import { MAX_ANSWER_BYTES } from './upstream';

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
export function upstreamFetch(): { fetch: typeof fetch; pool: Agent; close: () => Promise<void> } {
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
    const requestId = answer.statusCode === 200 && isEventStream(answer.headers['content-type']) ? requestIdOf(init.body) : undefined;
    if (requestId !== undefined) {
      const read = await untilAnswered(answer.body, requestId);
      if ('messages' in read) {
        responseHeaders.set('content-type', 'application/json');
        return new Response(JSON.stringify(read.messages), { status: 200, headers: responseHeaders });
      }
      return new Response(webStream(read.replay), { status: answer.statusCode, headers: responseHeaders });
    }
    return new Response(webStream(answer.body), { status: answer.statusCode, headers: responseHeaders });
  };
  // Whatever is still open when the gateway stops (an answer its reader abandoned) is cut, not waited for.
  return { fetch: send, pool: agent, close: () => agent.destroy() };
}

function webStream(body: Readable): ReadableStream<Uint8Array> {
  return Readable.toWeb(body) as WebReadableStream<Uint8Array> as ReadableStream<Uint8Array>;
}

function isEventStream(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.split(';')[0]!.trim().toLowerCase() === 'text/event-stream';
}

/** The id of the JSON-RPC request a POST body holds; undefined for a notification or a response. */
function requestIdOf(body: string): string | number | undefined {
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    const { id, method } = message;
    return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? id : undefined;
  } catch {
    return undefined;
  }
}

/** How long an SSE answer may stay open after it carried the response before its socket is cut. */
const LINGER_MS = 1_000;

/**
 * An SSE answer to one request, read here rather than through web streams: its messages (the
 * server's notifications, then the response) once the response has come, handed to the SDK's
 * client as one JSON answer (which it takes as it takes a JSON answer of several messages). Whatever
 * it is not sure of (an event of another type, data that is not JSON, a request of the server's,
 * which the client must see before the response comes, a stream that ends or fails without the
 * response, an answer past MAX_ANSWER_BYTES) is replayed to the SDK's client byte for byte, the rest
 * of the stream after it, so that it reads it as it always has (resuming from its last event id).
 */
function untilAnswered(
  body: Dispatcher.ResponseData['body'],
  requestId: string | number,
): Promise<{ messages: unknown[] } | { replay: Readable }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const messages: unknown[] = [];
    let received = 0;
    let settled = false;
    const decoder = new StringDecoder('utf8');
    const replay = () => {
      settled = true;
      detach();
      body.pause();
      resolve({ replay: Readable.from(rest(chunks, body), { objectMode: false }) });
    };
    const parser = createParser({
      onEvent(event) {
        if (settled || !event.data) return;
        if (event.event !== undefined && event.event !== 'message') return replay();
        let message: unknown;
        try {
          message = JSON.parse(event.data);
        } catch {
          return replay();
        }
        if (typeof message !== 'object' || message === null || Array.isArray(message)) return replay();
        const { id, method } = message as { id?: unknown; method?: unknown };
        if (method !== undefined && id !== undefined) return replay();
        messages.push(message);
        if (method === undefined && id === requestId) {
          settled = true;
          // The rest is drained (the server normally ends the stream now); one left open is cut.
          linger = setTimeout(() => body.destroy(), LINGER_MS).unref();
          resolve({ messages });
        }
      },
    });
    let linger: NodeJS.Timeout | undefined;
    const onData = (chunk: Buffer) => {
      if (settled) return;
      received += chunk.length;
      chunks.push(chunk);
      if (received > MAX_ANSWER_BYTES) return replay();
      parser.feed(decoder.write(chunk));
    };
    const onEnd = () => {
      clearTimeout(linger);
      if (!settled) replay();
    };
    const detach = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onEnd);
    };
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onEnd);
    // An error after the replay began is the replay's to report, never an unhandled 'error' event.
    body.on('error', () => undefined);
  });
}

/** What was read, then the rest of the stream (its error included). */
async function* rest(chunks: Buffer[], body: Readable): AsyncGenerator<Buffer> {
  yield* chunks;
  for await (const chunk of body as AsyncIterable<Buffer>) yield chunk;
}
