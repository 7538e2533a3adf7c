import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import { MAX_ANSWER_BYTES, UpstreamFailure } from './upstream';

/** What one exchange needs of the session the SDK's client opened: where, and the headers it sends. */
export interface HttpSession {
  url: URL;
  /** The configured headers, the session's id and its protocol version, as the SDK's transport sends them. */
  headers: Record<string, string>;
}

/** A message the upstream sent on the call's stream that is not the call's response (a notification, a request of its own). */
export type OtherMessage = (message: Record<string, unknown>) => void;

/**
 * One JSON-RPC request POSTed to a streamable HTTP upstream on the gateway's kept-alive pool, and
 * its response read from the answer (JSON, or an SSE stream read event by event) and parsed once:
 * the message that answers `id`, `result` or `error`. What else the stream carries (the server's
 * notifications, a ping) is handed to `other` as the SDK's transport would hand it to its client;
 * events of another type and data that is not JSON are skipped as the SDK skips them. An answer
 * past MAX_ANSWER_BYTES, a stream that ends without the response, or an HTTP error is an
 * UpstreamFailure; `signal` (the call's deadline) cuts the exchange.
 */
export async function exchange(
  pool: Dispatcher,
  session: HttpSession,
  id: string,
  body: string,
  signal: AbortSignal,
  other: OtherMessage,
): Promise<Record<string, unknown>> {
  const answer = await pool.request({
    origin: session.url.origin,
    path: `${session.url.pathname}${session.url.search}`,
    method: 'POST',
    headers: session.headers,
    body,
    signal,
  });
  if (answer.statusCode < 200 || answer.statusCode >= 300) {
    answer.body.resume();
    throw new UpstreamFailure('upstream_error', `the upstream call failed: HTTP ${answer.statusCode}`);
  }
  const type = mediaType(answer.headers['content-type']);
  if (type === 'application/json') return fromJson(await bounded(answer.body), id, other);
  if (type !== 'text/event-stream') {
    answer.body.resume();
    throw new UpstreamFailure('upstream_invalid_answer', "the upstream's answer was not a tool result");
  }
  let read = await fromEvents(answer.body, id, other);
  // A stream the server ended after an event id but before the response is resumed from that id
  // (a GET with Last-Event-ID), as the SDK's transport resumes it.
  for (let resumed = 0; read.lastEventId !== undefined && resumed < MAX_RESUMPTIONS; resumed += 1) {
    const { 'content-type': _post, ...headers } = session.headers;
    const again = await pool.request({
      origin: session.url.origin,
      path: `${session.url.pathname}${session.url.search}`,
      method: 'GET',
      headers: { ...headers, accept: 'text/event-stream', 'last-event-id': read.lastEventId },
      signal,
    });
    if (again.statusCode !== 200 || mediaType(again.headers['content-type']) !== 'text/event-stream') {
      again.body.resume();
      break;
    }
    read = await fromEvents(again.body, id, other);
  }
  if (!read.response) throw new UpstreamFailure('upstream_closed', 'the upstream closed the connection during the call');
  return read.response;
}

/** How many times one call's stream is resumed after the server ended it without the response. */
const MAX_RESUMPTIONS = 2;

function mediaType(contentType: string | string[] | undefined): string | undefined {
  return typeof contentType === 'string' ? contentType.split(';')[0]!.trim().toLowerCase() : undefined;
}

const tooLarge = () => new UpstreamFailure('upstream_invalid_answer', `the upstream's answer was larger than ${MAX_ANSWER_BYTES} bytes`);
const invalid = () => new UpstreamFailure('upstream_invalid_answer', "the upstream's answer was not a tool result");

/** The whole body as text, within MAX_ANSWER_BYTES. */
async function bounded(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > MAX_ANSWER_BYTES) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A JSON answer: one message, or a batch of them, the response among them. */
function fromJson(text: string, id: string, other: OtherMessage): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid();
  }
  let response: Record<string, unknown> | undefined;
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (!isRecord(message)) throw invalid();
    if (isResponseTo(message, id)) response = message;
    else other(message);
  }
  if (!response) throw invalid();
  return response;
}

function isResponseTo(message: Record<string, unknown>, id: string): boolean {
  return message.id === id && message.method === undefined && ('result' in message || 'error' in message);
}

/**
 * An SSE answer read until the response's event; the rest of the stream is drained, or cut if it
 * stays open. A stream that ends first: the last event id it carried, to resume from, if any.
 */
function fromEvents(
  body: Dispatcher.ResponseData['body'],
  id: string,
  other: OtherMessage,
): Promise<{ response: Record<string, unknown>; lastEventId?: undefined } | { response?: undefined; lastEventId: string }> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let lastEventId: string | undefined;
    let settled = false;
    const decoder = new StringDecoder('utf8');
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      outcome();
    };
    const parser = createParser({
      onEvent(event) {
        if (event.id) lastEventId = event.id;
        if (settled || !event.data || (event.event !== undefined && event.event !== 'message')) return;
        let message: unknown;
        try {
          message = JSON.parse(event.data);
        } catch {
          // As the SDK's transport: data that is not JSON is skipped.
          return;
        }
        if (!isRecord(message)) return;
        if (!isResponseTo(message, id)) return other(message);
        settle(() => {
          // The rest is drained (the server normally ends the stream now); one left open is cut.
          const linger = setTimeout(() => body.destroy(), LINGER_MS).unref();
          body.once('end', () => clearTimeout(linger));
          body.resume();
          resolve({ response: message });
        });
      },
    });
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > MAX_ANSWER_BYTES)
        return settle(() => {
          body.destroy();
          reject(tooLarge());
        });
      parser.feed(decoder.write(chunk));
    };
    body.on('data', onData);
    body.once('end', () =>
      settle(() =>
        lastEventId !== undefined
          ? resolve({ lastEventId })
          : reject(new UpstreamFailure('upstream_closed', 'the upstream closed the connection during the call')),
      ),
    );
    body.once('error', (error) => settle(() => reject(error)));
    // An error once settled is nobody's to report.
    body.on('error', () => undefined);
  });
}

/** How long an SSE answer may stay open after it carried the response before its socket is cut. */
const LINGER_MS = 1_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
