import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import koaJwt from 'koa-jwt';
import jwksRsa from 'jwks-rsa';
import { DependencyUnavailableError, isDependencyFailure } from '../kernel/dependency';

export interface HumanIdentity {
  userId: string;
}

export type HumanJwtVerifier = (token: string) => Promise<HumanIdentity | null>;

const JWKS_TIMEOUT_MS = 5000;
const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'];

/**
 * The key set could not be consulted: jwks-rsa names a failed or unusable response `JwksError`,
 * network errors keep their code, and `JwksRateLimitError` (a fetch held back, see jwksKeys) reaches
 * here only when the last fetch failed. A token then may well be good: 503.
 */
function keySetUnreachable(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'JwksError' || name === 'JwksRateLimitError' || isDependencyFailure(error);
}

/** A jwks-rsa client that remembers what its last fetch of the key set brought, or that it failed. */
class ObservedJwksClient extends jwksRsa.JwksClient {
  lastFetch: { ok: true; keys: jwksRsa.SigningKey[] } | { ok: false } | undefined;

  override async getSigningKeys(): Promise<jwksRsa.SigningKey[]> {
    try {
      const keys = await super.getSigningKeys();
      this.lastFetch = { ok: true, keys };
      return keys;
    } catch (error) {
      this.lastFetch = { ok: false };
      throw error;
    }
  }
}

/**
 * The verification key of a token's header, from the JWKS at `jwksUri` (cached per kid). jwks-rsa
 * fetches the key set for a kid it has not cached at most 10 times a minute, however many unseen
 * kids arrive; past that it refuses with `JwksRateLimitError`. Such a refusal is judged by the
 * last fetch, which the limit puts within the last minute: it failed, the provider is away (503);
 * it answered, the kid is looked up in the key set it brought: absent, the token names a key the
 * provider does not publish (401), so a flood of forged kids cannot turn refusals into 503s.
 */
function jwksKeys(jwksUri: string) {
  const client = new ObservedJwksClient({ jwksUri, cache: true, rateLimit: true, timeout: JWKS_TIMEOUT_MS });
  // jwks-rsa hands out the same SigningKey for a kid while it caches it: its KeyObject is parsed once.
  const parsed = new WeakMap<jwksRsa.SigningKey, KeyObject>();
  const keyObject = (key: jwksRsa.SigningKey): KeyObject => {
    let object = parsed.get(key);
    if (!object) parsed.set(key, (object = createPublicKey(key.getPublicKey())));
    return object;
  };
  return async (header: { alg?: unknown; kid?: unknown }): Promise<KeyObject> => {
    if (typeof header.alg !== 'string' || !ASYMMETRIC_ALGORITHMS.includes(header.alg)) throw new Error('unsupported token algorithm');
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    try {
      return keyObject(await client.getSigningKey(kid));
    } catch (error) {
      const last = client.lastFetch;
      if ((error as { name?: unknown }).name !== 'JwksRateLimitError' || !last?.ok) throw error;
      const key = kid === undefined ? (last.keys.length === 1 ? last.keys[0] : undefined) : last.keys.find((k) => k.kid === kid);
      if (!key) throw new Error('the token names a key the JWKS fetched moments ago does not hold');
      return keyObject(key);
    }
  };
}

/** Subjects that look like our own ids would be confused with seats and other records. */
const RESERVED_SUBJECT = /^(agt|pod|grt|con|ins|brk|evt|rtk|btk|call)_/;

/** JWT_SECRET, or JWT_JWKS_URI with the issuer and audiences its tokens must carry. */
export interface HumanJwtSettings {
  JWT_SECRET: string;
  JWT_JWKS_URI?: string;
  JWT_ISSUER?: string;
  JWT_AUDIENCE?: string;
  OIDC_ISSUER?: string;
  OIDC_CLIENT_ID?: string;
}

/**
 * Whose tokens are a person's credential: those of one issuer (JWT_ISSUER, else the console's
 * OIDC_ISSUER) meant for this service, that is an access token for this API (`aud` holds
 * JWT_AUDIENCE) or an ID token for the console's client (`aud` holds OIDC_CLIENT_ID). Anything
 * else the provider's keys sign (a token without `aud`, another client's ID token, another API's
 * access token) is not. Production with a JWKS refuses to start without an issuer and an audience
 * (src/config.ts).
 */
export function trustedTokens(settings: HumanJwtSettings): { issuer?: string; audiences: string[]; clientId?: string } {
  const audiences = [...new Set([settings.JWT_AUDIENCE, settings.OIDC_CLIENT_ID].filter((aud): aud is string => Boolean(aud)))];
  return { issuer: settings.JWT_ISSUER ?? settings.OIDC_ISSUER, audiences, clientId: settings.OIDC_CLIENT_ID };
}

/**
 * An ID token for the console's client that other parties may hold too: one with several
 * audiences, or naming an authorized party, was issued to its `azp`, which must be our client
 * (OpenID Connect Core §3.1.3.7). An access token for this API is judged by its `aud` alone.
 */
function issuedToAnotherClient(claims: Record<string, unknown>, trusted: ReturnType<typeof trustedTokens>, apiAudience?: string): boolean {
  if (!trusted.clientId) return false;
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (apiAudience && apiAudience !== trusted.clientId && aud.includes(apiAudience)) return false;
  return (aud.length > 1 || claims.azp !== undefined) && claims.azp !== trusted.clientId;
}

/**
 * Verifies a human JWT with koa-jwt, for the Authorization header and for a subject token that a
 * broker forwards alike. Development: HS256 with JWT_SECRET. Production: the keys at
 * JWT_JWKS_URI, asymmetric algorithms only, so an HMAC token signed with a public key
 * (algorithm confusion) and `alg: none` are both refused; and only the tokens `trustedTokens` says.
 */
export function createHumanJwtVerifier(config: HumanJwtSettings): HumanJwtVerifier {
  // Keys go to jsonwebtoken as KeyObjects, which koa-jwt passes through (its types say strings and
  // Buffers only). Given a string, jsonwebtoken builds a KeyObject on every verification, and for
  // an HMAC secret it first tries to parse it as a PEM public key: an OpenSSL failure paid on
  // every HS256 verification, a forged token's included, that a key built once never pays.
  const options = config.JWT_JWKS_URI
    ? { secret: jwksKeys(config.JWT_JWKS_URI), algorithms: ASYMMETRIC_ALGORITHMS }
    : { secret: createSecretKey(Buffer.from(config.JWT_SECRET)), algorithms: ['HS256'] };
  // The console's settings name whose tokens the JWKS signs only where the keys are the provider's.
  const trusted = config.JWT_JWKS_URI
    ? trustedTokens(config)
    : { issuer: config.JWT_ISSUER, audiences: config.JWT_AUDIENCE ? [config.JWT_AUDIENCE] : [] };
  const middleware = koaJwt({
    ...(options as unknown as Pick<koaJwt.Options, 'secret' | 'algorithms'>),
    issuer: trusted.issuer,
    audience: trusted.audiences.length > 0 ? trusted.audiences : undefined,
    passthrough: true,
    key: 'claims',
    getToken: (ctx) => (ctx.state as { bearer?: string }).bearer ?? null,
  });

  return async (token) => {
    // koa-jwt is middleware; it only touches ctx.state here because getToken resolves the token.
    const scratch = { state: { bearer: token } as Record<string, unknown> };
    await middleware(scratch as never, async () => undefined);
    const claims = scratch.state.claims as Record<string, unknown> | undefined;
    const failure = scratch.state.jwtOriginalError;
    // The identity provider's keys could not be fetched: say so (503) rather than call a
    // possibly good token invalid (401). Either way nothing is allowed.
    if (failure && keySetUnreachable(failure)) throw new DependencyUnavailableError('the JWKS could not be fetched');
    if (failure || !claims) return null;
    if (issuedToAnotherClient(claims, trusted, config.JWT_AUDIENCE)) return null;
    const { sub, exp } = claims;
    if (typeof sub !== 'string' || sub.length === 0 || sub.length > 255 || RESERVED_SUBJECT.test(sub)) return null;
    if (typeof exp !== 'number') return null;
    return { userId: sub };
  };
}
