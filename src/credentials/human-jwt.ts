import koaJwt from 'koa-jwt';
import jwksRsa from 'jwks-rsa';
import { DependencyUnavailableError, isDependencyFailure } from '../kernel/dependency';

export interface HumanIdentity {
  userId: string;
}

export type HumanJwtVerifier = (token: string) => Promise<HumanIdentity | null>;

const JWKS_TIMEOUT_MS = 5000;

/**
 * The key set could not be consulted: jwks-rsa names a failed or unusable response `JwksError`
 * and a fetch it holds back (at most 10 a minute, however many unseen kids arrive)
 * `JwksRateLimitError`; network errors keep their code. A token then may well be good: 503.
 */
function keySetUnreachable(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'JwksError' || name === 'JwksRateLimitError' || isDependencyFailure(error);
}

/** Subjects that look like our own ids would be confused with seats and other records. */
const RESERVED_SUBJECT = /^(agt|pod|grt|con|ins|brk|evt|rtk|btk|call)_/;

/**
 * Verifies a human JWT with koa-jwt, for the Authorization header and for a subject token that a
 * broker forwards alike. Development: HS256 with JWT_SECRET. Production: the keys at
 * JWT_JWKS_URI, asymmetric algorithms only, so an HMAC token signed with a public key
 * (algorithm confusion) and `alg: none` are both refused.
 */
/** JWT_SECRET, or JWT_JWKS_URI with JWT_ISSUER and JWT_AUDIENCE (CONTRACT §2). */
export interface HumanJwtSettings {
  JWT_SECRET: string;
  JWT_JWKS_URI?: string;
  JWT_ISSUER?: string;
  JWT_AUDIENCE?: string;
}

export function createHumanJwtVerifier(config: HumanJwtSettings): HumanJwtVerifier {
  const options = config.JWT_JWKS_URI
    ? {
        secret: jwksRsa.koaJwtSecret({ jwksUri: config.JWT_JWKS_URI, cache: true, rateLimit: true, timeout: JWKS_TIMEOUT_MS }),
        algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'],
      }
    : { secret: config.JWT_SECRET, algorithms: ['HS256'] };
  const middleware = koaJwt({
    ...options,
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
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
    const { sub, exp } = claims;
    if (typeof sub !== 'string' || sub.length === 0 || sub.length > 255 || RESERVED_SUBJECT.test(sub)) return null;
    if (typeof exp !== 'number') return null;
    return { userId: sub };
  };
}
