import { createHash } from 'node:crypto';
import { ApiProblem, createClient } from '@grant-broker/client';

export type Verdict = 'ok' | 'bad_token' | 'grant_not_found' | 'broker_unavailable';

/**
 * Whether a bearer token may act on a grant, asked of the grant broker itself: the grant read with
 * the agent's own token (401: the token is bad; 404: not a grant this token may read). A yes is
 * remembered for `rememberMs` under the token's digest (never the token), in a map bounded in
 * entries; a no is never remembered, so a fixed token works at once. Each check still verifies the
 * token afresh (it is the check's `subjectToken`), so a token revoked within `rememberMs` reaches
 * the check and is refused there.
 */
export class AgentAuthenticator {
  private readonly verified = new Map<string, number>();

  constructor(
    private readonly brokerUrl: string,
    private readonly options: { rememberMs: number; maxRemembered: number; fetch?: typeof fetch },
  ) {}

  async verify(token: string, grantId: string, now = Date.now()): Promise<Verdict> {
    const key = sessionOwner(token, grantId);
    const until = this.verified.get(key);
    if (until !== undefined && until > now) return 'ok';
    this.verified.delete(key);
    // No retries: an agent waiting on its HTTP request is better told 503 than held.
    const asAgent = createClient({ baseUrl: this.brokerUrl, token, retries: 0, fetch: this.options.fetch });
    try {
      await asAgent.unwrap(asAgent.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } }));
    } catch (error) {
      if (error instanceof ApiProblem && (error.status === 401 || error.status === 403)) return 'bad_token';
      if (error instanceof ApiProblem && (error.status === 404 || error.status === 400 || error.status === 422)) return 'grant_not_found';
      return 'broker_unavailable';
    }
    if (this.verified.size >= this.options.maxRemembered) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(key, now + this.options.rememberMs);
    return 'ok';
  }
}

/** Who owns a session: the token's digest and the grant, so a session id alone is worth nothing. */
export const sessionOwner = (token: string, grantId: string) => `${createHash('sha256').update(token).digest('hex')}\u0000${grantId}`;
