import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { guardedLookup, literalRefusal } from '../outbound/address-guard';

/** What one delivery attempt may cost: the whole exchange, and the bytes of the answer read. */
export interface SendLimits {
  timeoutMs: number;
  maxResponseBytes: number;
  allowPrivate: boolean;
}

export const DEFAULT_SEND_LIMITS: Omit<SendLimits, 'allowPrivate'> = { timeoutMs: 10_000, maxResponseBytes: 16 * 1024 };

export type SendResult = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/**
 * POSTs one message, signed as Standard Webhooks signs (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>`, by the `standardwebhooks`
 * package). A 2xx is delivered; anything else, a refused address, a timeout or a reset is a
 * failure to retry. The connection goes only to an address just judged public (guardedLookup),
 * redirects are not followed, and at most `maxResponseBytes` of the answer are read before the
 * socket is closed: a receiver can neither redirect a delivery inward nor hold a replica's memory
 * or time.
 */
export function sendWebhook(
  target: { url: string; secret: string },
  message: { id: string; timestampMs: number; body: string },
  limits: SendLimits,
): Promise<SendResult> {
  const url = new URL(target.url);
  const timestamp = new Date(message.timestampMs);
  const signature = new Webhook(target.secret).sign(message.id, timestamp, message.body);
  const transport = url.protocol === 'https:' ? https : http;
  const refused = literalRefusal(url, limits.allowPrivate);
  if (refused) return Promise.resolve({ ok: false, status: null, error: refused.message });
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const request = transport.request(
      url,
      {
        method: 'POST',
        lookup: guardedLookup(limits.allowPrivate),
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(message.body),
          'user-agent': 'grant-broker-webhooks',
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(message.timestampMs / 1000)),
          'webhook-signature': signature,
        },
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // The answer is not used: past the bound, the status is all there is to know.
          if (read > limits.maxResponseBytes) finishWith(status);
        });
        response.on('end', () => finishWith(status));
        response.on('error', () => finishWith(status));
      },
    );
    const finishWith = (status: number) =>
      finish(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, status, error: `answered ${status}` });
    const timer = setTimeout(() => finish({ ok: false, status: null, error: `no answer within ${limits.timeoutMs} ms` }), limits.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        status: null,
        error: error.name === 'AddressNotAllowedError' ? error.message : (error.code ?? 'connection failed'),
      }),
    );
    request.end(message.body);
  });
}
