export interface RetryOptions {
  /** Retries after the first attempt. */
  retries: number;
  /** Backoff without a Retry-After: baseDelayMs, then doubling. */
  baseDelayMs: number;
  /**
   * The longest wait a `Retry-After` may ask for. An answer that asks for longer is returned as it
   * is, not retried: the caller learns the service's real answer now instead of after a long sleep.
   */
  maxRetryAfterMs: number;
  fetch: typeof fetch;
}

/** Methods that change nothing on the server (RFC 9110 §9.2.1): sending one twice is harmless. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Network failures after which the request certainly never reached the service: no connection
 * was made. Anything else (a reset, a timeout, a socket closed mid-answer) may have come after
 * the service acted.
 */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * fetch with the retries a client of this service wants, and only those that cannot do a thing
 * twice:
 * - a 503 is retried for every method: the service answers 503 only when it did nothing (a broker
 *   check answered 503 consumed no budget and wrote no record);
 * - a 429 is retried for every method when it says `Retry-After` (the request was refused before
 *   any work), and returned as it is without one;
 * - a network failure is retried for GET, HEAD and OPTIONS; for any other method (a POST to
 *   `/api/broker/check` takes a unit of budget, `POST /api/grants` makes a grant) only when no
 *   connection was ever made, since otherwise the service may have acted on the first send.
 * `Retry-After` is honoured as delta-seconds or as an HTTP-date, up to `maxRetryAfterMs`.
 * Waits end early when the request's signal aborts.
 */
export function retryingFetch(options: RetryOptions): typeof fetch {
  return async (input, init) => {
    // A Request, or another object of its shape (ClientOptions.Request): its own method and signal count.
    const own = typeof input === 'object' && !(input instanceof URL) ? (input as Partial<Pick<Request, 'method' | 'signal'>>) : undefined;
    const method = (init?.method ?? own?.method ?? 'GET').toUpperCase();
    const signal = init?.signal ?? own?.signal;
    for (let attempt = 0; ; attempt += 1) {
      // A platform Request's body is a stream, read once: each attempt sends a copy. Anything else is sent as it is.
      const request = input instanceof Request ? input.clone() : input;
      let delayMs: number;
      try {
        const response = await options.fetch(request, init);
        if (attempt >= options.retries) return response;
        const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
        if (response.status === 503) delayMs = retryAfterMs ?? options.baseDelayMs * 2 ** attempt;
        else if (response.status === 429 && retryAfterMs !== undefined) delayMs = retryAfterMs;
        else return response;
        if (delayMs > options.maxRetryAfterMs) return response;
        // The answer is not used: free its body so the connection can be reused.
        await response.body?.cancel().catch(() => undefined);
      } catch (error) {
        if (attempt >= options.retries || signal?.aborted) throw error;
        if (!SAFE_METHODS.has(method) && !neverConnected(error)) throw error;
        delayMs = options.baseDelayMs * 2 ** attempt;
      }
      await sleep(Math.min(delayMs, options.maxRetryAfterMs), signal);
    }
  };
}

/**
 * `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Undefined when absent or
 * unreadable; a date in the past is no wait at all.
 */
export function parseRetryAfter(value: string | null, nowMs: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date names its day and month ("Sun, 06 Nov 1994 08:49:37 GMT"); Date.parse alone
  // would read "-3" as a year.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** undici wraps the socket's error as `cause` (an AggregateError when several addresses were tried). */
function neverConnected(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string' && NEVER_CONNECTED.has(code)) return true;
  if (Array.isArray(errors) && errors.length > 0) return errors.every((each) => neverConnected(each, depth + 1));
  return neverConnected(cause, depth + 1);
}

function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
