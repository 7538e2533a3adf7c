import { ApiProblem, createClient } from '@grant-broker/client';
import type { JWTPayload } from 'jose';
import type { BearerKind, Identified } from './agent-auth';
import type { AuthorizationServer } from './authorization-server';
import { jose } from './esm';

/** The one scope a host asks for to use a gateway (consent, not scopes, says what it may do). */
export const GATEWAY_SCOPE = 'mcp';

/** Where the gateway finds what verifies an access token: its own resource URI, and the authorization server once known. */
export interface AccessTokenSettings {
  brokerUrl: string;
  fetch?: typeof fetch;
  /** This gateway's resource URI: the only audience it accepts. */
  resource: () => string;
  authorizationServer: () => AuthorizationServer | undefined;
}

/**
 * An MCP host's OAuth access token (CONTRACT §20), verified here, without asking anyone: a JWT of
 * type `at+jwt` signed ES256 by one of the authorization server's published keys, from its
 * issuer, for this gateway's resource (`aud`), not expired, with the `mcp` scope. It stands for its
 * agent (`agent_id`) on its one grant (`sub`, the child grant the consent created): it needs no
 * `Grant-Id`, and one naming another grant is refused. The grant is then read with the token
 * itself (the grant broker serves a host's token that one grant and nothing else), so a grant
 * revoked or expired since is refused here as the check refuses it.
 */
export function accessTokens(settings: AccessTokenSettings): BearerKind {
  return {
    recognizes: (token) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token),
    async identify(token, grantHeader): Promise<Identified> {
      const server = settings.authorizationServer();
      if (!server) return { ok: false, refusal: 'authorization_server_unknown' };
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jose().jwtVerify(token, server.keys, {
          issuer: server.issuer,
          audience: settings.resource(),
          typ: 'at+jwt',
          algorithms: ['ES256'],
          requiredClaims: ['exp', 'sub', 'client_id'],
        }));
      } catch (error) {
        return { ok: false, refusal: keysUnreachable(error) ? 'broker_unavailable' : 'bad_token' };
      }
      const { sub: grantId, agent_id: agentId, scope, exp } = claims;
      if (typeof grantId !== 'string' || typeof agentId !== 'string' || typeof exp !== 'number') return { ok: false, refusal: 'bad_token' };
      if (typeof scope !== 'string' || !scope.split(' ').includes(GATEWAY_SCOPE)) return { ok: false, refusal: 'bad_token' };
      if (grantHeader !== undefined && grantHeader !== grantId) return { ok: false, refusal: 'grant_mismatch' };
      // No retries: a host waiting on its HTTP request is better told 503 than held.
      const asHost = createClient({ baseUrl: settings.brokerUrl, token, retries: 0, fetch: settings.fetch });
      let grant;
      try {
        grant = await asHost.unwrap(asHost.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } }));
      } catch (error) {
        if (!(error instanceof ApiProblem) || error.status >= 500) return { ok: false, refusal: 'broker_unavailable' };
        return { ok: false, refusal: 'token_ended' };
      }
      if (grant.status !== 'active' || Date.parse(grant.expiresAt) <= Date.now()) return { ok: false, refusal: 'token_ended' };
      return { ok: true, bearer: { agentId, grantId, rootId: grant.rootId, expiresAtMs: exp * 1000, oauth: true } };
    },
  };
}

/** The published keys could not be fetched (a timeout, a network failure, an answer other than 200): the broker's fault, not the token's. */
function keysUnreachable(error: unknown): boolean {
  const { errors } = jose();
  return (
    error instanceof errors.JWKSTimeout ||
    error instanceof TypeError ||
    (error instanceof errors.JOSEError && error.code === 'ERR_JOSE_GENERIC')
  );
}
