/** GitHub did not answer in time, answered too much, or the connection broke. */
export class GitHubUnreachableError extends Error {}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for the token request that cannot hold the check for long or fill memory: the whole
 * exchange (headers and body) within `timeoutMs`, the body read up to `maxBytes` and refused past
 * them, no redirect followed (a token request is never redirected; a redirect is not trusted).
 */
export function boundedFetch(limits: { timeoutMs: number; maxBytes: number }): typeof fetch {
  return async (input, init) => {
    const signal = AbortSignal.timeout(limits.timeoutMs);
    let response: Response;
    try {
      response = await fetch(input, { ...init, signal, redirect: 'error' });
    } catch {
      throw new GitHubUnreachableError(signal.aborted ? `no answer within ${limits.timeoutMs} ms` : 'the connection failed');
    }
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > limits.maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new GitHubUnreachableError(`an answer larger than ${limits.maxBytes} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body ?? []) {
        size += (chunk as Uint8Array).byteLength;
        if (size > limits.maxBytes) throw new GitHubUnreachableError(`an answer larger than ${limits.maxBytes} bytes`);
        chunks.push(chunk as Uint8Array);
      }
    } catch (error) {
      await response.body?.cancel().catch(() => undefined);
      if (error instanceof GitHubUnreachableError) throw error;
      throw new GitHubUnreachableError(signal.aborted ? `no answer within ${limits.timeoutMs} ms` : 'the answer broke off');
    }
    const body = NULL_BODY_STATUSES.has(response.status) ? null : Buffer.concat(chunks);
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
