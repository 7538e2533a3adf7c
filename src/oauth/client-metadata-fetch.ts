import https from 'node:https';
import { Readable } from 'node:stream';
import { guardedLookup, literalRefusal } from '../outbound/address-guard';

export interface ClientMetadataFetchLimits {
  /** Loopback, private and link-local addresses are refused unless the deployment allows them. */
  allowPrivate: boolean;
  /** Bytes of an answer read at most; past it the connection is closed. */
  maxBytes: number;
  timeoutMs: number;
  /** Certificates trusted beside Node's store (tests; NODE_EXTRA_CA_CERTS does the same at start). */
  ca?: string;
  /** How long a document that failed (too slow, too large, unreachable, refused) is refused without another fetch. */
  failureMemoryMs?: number;
}

/** Failed documents remembered at most: the oldest is forgotten first. */
const MAX_REMEMBERED_FAILURES = 1_000;

/**
 * The `fetch` oidc-provider uses for Client ID Metadata Documents: GET over https only, to an
 * address judged public when the connection is made (the webhooks' guard: no loopback, private or
 * link-local address, including through DNS rebinding), no redirect followed, bounded in time and
 * in bytes whatever the library asks.
 */
export function clientMetadataFetch(limits: ClientMetadataFetchLimits): typeof fetch {
  // oidc-provider looks a client up again to render an authorization error: without this, a document
  // that hangs would hold one request for twice the time bound, and anyone could have it fetched again at will.
  const failedUntil = new Map<string, number>();
  const failureMemoryMs = limits.failureMemoryMs ?? 30_000;
  const failed = (url: string) => {
    failedUntil.delete(url);
    if (failedUntil.size >= MAX_REMEMBERED_FAILURES) failedUntil.delete(failedUntil.keys().next().value!);
    failedUntil.set(url, Date.now() + failureMemoryMs);
  };
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.protocol !== 'https:') return reject(new Error('a client metadata document is fetched over https only'));
      const refused = literalRefusal(url, limits.allowPrivate);
      if (refused) return reject(refused);
      if ((failedUntil.get(url.href) ?? 0) > Date.now()) return reject(new Error('this client metadata document failed moments ago'));
      const fail = (error: Error) => {
        failed(url.href);
        reject(error);
      };
      const signals = [AbortSignal.timeout(limits.timeoutMs), ...(init?.signal ? [init.signal] : [])];
      const request = https.request(
        url,
        {
          method: 'GET',
          headers: { accept: 'application/json', 'user-agent': 'grant-broker' },
          lookup: guardedLookup(limits.allowPrivate),
          agent: false,
          signal: AbortSignal.any(signals),
          ...(limits.ca ? { ca: limits.ca } : {}),
        },
        (response) => {
          let read = 0;
          // Too large, or cut off by the time bound while the body was read.
          response.once('error', () => failed(url.href));
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > limits.maxBytes) response.destroy(new Error(`the answer is larger than ${limits.maxBytes} bytes`));
          });
          if ((response.statusCode ?? 0) >= 300) failed(url.href);
          const headers = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          const status = response.statusCode ?? 502;
          resolve(
            new Response(Readable.toWeb(response) as ReadableStream, { status: status >= 200 && status <= 599 ? status : 502, headers }),
          );
        },
      );
      request.on('error', fail);
      request.end();
    });
}
