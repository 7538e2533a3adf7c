import type { JWK, JWTPayload } from 'jose';
import type { Clock } from '../kernel/clock';
import { jose } from './provider-module';
import { GATEWAY_SCOPE } from './provider';

/** What a verified access token of CONTRACT §20 stands for. */
export interface AccessTokenClaims {
  /** The agent the host acts as (`agent_id`). */
  agentId: string;
  /** The child grant the consent created (`sub`): the only grant the token is good for. */
  grantId: string;
  clientId: string;
  /** The gateway's resource URI the token was issued for (`aud`). */
  resource: string;
  expiresAtMs: number;
}

/**
 * The authorization server's own access tokens, as the rest of the service meets them: forwarded
 * by a gateway as a check's subject (src/broker), read by ext_authz to find the grant, and taken by
 * `GET /api/grants/:grantId` for the one grant they stand for.
 */
export interface AccessTokens {
  /**
   * The grant a token names, when it is shaped as one of this issuer's access tokens (`typ`
   * `at+jwt`, `iss` this issuer). Not verified: only to route a request whose check verifies it.
   */
  claimedGrant(token: string): string | undefined;
  /** undefined: not one of this issuer's access tokens; null: one that does not verify (signature, expiry, scope); else what it stands for. */
  verify(token: string): Promise<AccessTokenClaims | null | undefined>;
  /**
   * The public signing keys as stored now (read again at most every `reloadAfterMs`): the JWKS
   * every replica publishes alike, the keys a replica started later rotated to included.
   */
  publishedKeys(): Promise<JWK[]>;
}

export interface AccessTokenDeps {
  issuer: string;
  clock: Clock;
  /** The public signing keys as stored now (./signing-keys.ts `publishedKeys`). */
  loadKeys: () => Promise<JWK[]>;
  /** A key id not among the loaded keys reloads them at most this often (another replica may have rotated). */
  reloadAfterMs?: number;
}

/**
 * Verification with `jose` against the keys in Postgres (every replica's, whichever signed): ES256
 * only, `typ` `at+jwt` (RFC 9068: an ID token or a person's JWT is never taken for one), this
 * issuer, an expiry still ahead on the service's clock, the `mcp` scope, and the claims the
 * authorization server puts on every token (`sub` the grant, `agent_id`, `client_id`, one `aud`).
 */
export function accessTokens(deps: AccessTokenDeps): AccessTokens {
  const reloadAfterMs = deps.reloadAfterMs ?? 1_000;
  let keys: { set: ReturnType<ReturnType<typeof jose>['createLocalJWKSet']>; jwks: JWK[]; kids: Set<string>; at: number } | undefined;
  let loading: Promise<NonNullable<typeof keys>> | undefined;

  const load = () =>
    (loading ??= deps
      .loadKeys()
      .then((jwks) => {
        keys = {
          set: jose().createLocalJWKSet({ keys: jwks }),
          jwks,
          kids: new Set(jwks.map((jwk) => String(jwk.kid))),
          at: deps.clock.now(),
        };
        return keys;
      })
      .finally(() => (loading = undefined)));

  /** The key set that knows this key id, reloaded (bounded in rate) when it may have appeared since. */
  async function keySetFor(kid: string | undefined) {
    let current = keys ?? (await load());
    if (kid !== undefined && !current.kids.has(kid) && deps.clock.now() - current.at >= reloadAfterMs) current = await load();
    return current.set;
  }

  function shape(token: string): { kid?: string; payload: JWTPayload } | undefined {
    if (token.startsWith('art_') || token.startsWith('bkt_') || token.split('.').length !== 3) return undefined;
    try {
      const header = jose().decodeProtectedHeader(token);
      if (header.typ !== 'at+jwt') return undefined;
      const payload = jose().decodeJwt(token);
      return payload.iss === deps.issuer ? { kid: header.kid, payload } : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    async publishedKeys() {
      const current = keys && deps.clock.now() - keys.at < reloadAfterMs ? keys : await load();
      return current.jwks;
    },
    claimedGrant(token) {
      const sub = shape(token)?.payload.sub;
      return typeof sub === 'string' ? sub : undefined;
    },
    async verify(token) {
      const shaped = shape(token);
      if (!shaped) return undefined;
      const keySet = await keySetFor(shaped.kid);
      let payload: JWTPayload;
      try {
        ({ payload } = await jose().jwtVerify(token, keySet, {
          issuer: deps.issuer,
          typ: 'at+jwt',
          algorithms: ['ES256'],
          requiredClaims: ['exp', 'iat', 'sub', 'aud', 'client_id'],
          currentDate: new Date(deps.clock.now()),
        }));
      } catch {
        return null;
      }
      const { sub, aud, exp, agent_id: agentId, client_id: clientId, scope } = payload;
      const scopes = typeof scope === 'string' ? scope.split(' ') : [];
      if (typeof sub !== 'string' || typeof aud !== 'string' || typeof agentId !== 'string' || typeof clientId !== 'string') return null;
      if (!scopes.includes(GATEWAY_SCOPE) || typeof exp !== 'number') return null;
      return { agentId, grantId: sub, clientId, resource: aud, expiresAtMs: exp * 1000 };
    },
  };
}
