/**
 * fetch with the retries a client of this service wants: a 503 means nothing was done (or a
 * change is committed and repeating it confirms it), so it is retried with backoff, honouring
 * `Retry-After`; a network failure too. Anything else is answered as is.
 */
export function retryingFetch(options: { retries: number; baseDelayMs: number; fetch: typeof fetch }): typeof fetch {
  return async (input, init) => {
    for (let attempt = 0; ; attempt += 1) {
      const request = input instanceof Request ? input.clone() : input;
      let response: Response | undefined;
      try {
        response = await options.fetch(request, init);
        if (response.status !== 503 || attempt >= options.retries) return response;
      } catch (error) {
        if (attempt >= options.retries) throw error;
      }
      const retryAfterS = Number(response?.headers.get('retry-after'));
      const delay = Number.isFinite(retryAfterS) && retryAfterS > 0 ? retryAfterS * 1000 : options.baseDelayMs * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, 30_000)));
    }
  };
}
