import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { acceptOnly, bearerToken, unauthenticated, type CredentialResolver } from '../credentials/authenticators';
import { isDependencyFailure } from '../kernel/dependency';
import { ApiError, PROBLEMS } from '../kernel/errors';
import type { Logger } from '../kernel/log';
import { ConsentDecisionBody, consentDetails, decideConsent, type ConsentDeps } from './consent';
import { JWKS_PATH } from './provider';

export interface OAuthHandlerDeps extends ConsentDeps {
  provider: Provider;
  /** The public signing keys as stored now (every replica's): what `GET /oauth/jwks` publishes. */
  publishedKeys: () => Promise<readonly object[]>;
  resolveCredential: CredentialResolver;
  log: Logger;
}

const CONSENT = /^\/oauth\/consent\/([A-Za-z0-9_-]{1,64})(\/details)?$/;
const MAX_BODY_BYTES = 16 * 1024;

/** Whether a path is the authorization server's (its metadata and every endpoint under /oauth/). */
export function isAuthorizationServerPath(path: string): boolean {
  return path.startsWith('/oauth/') || path === '/.well-known/oauth-authorization-server' || path === '/.well-known/openid-configuration';
}

/**
 * The authorization server on the service's port: the consent endpoints here, everything else
 * oidc-provider's own. The consent endpoints live under the interaction's path, so the browser
 * sends the interaction's cookie with them: a consent is only ever given for the authorization
 * request the same browser started (a link to someone else's consent page finds nothing).
 * - `GET /oauth/consent/:uid`: the console's consent page (a redirect into the console);
 * - `GET /oauth/consent/:uid/details`: what the page shows (a person's bearer token);
 * - `POST /oauth/consent/:uid`: the person's answer; answers `{redirectTo}`, where the browser goes.
 */
export function oauthHandler(deps: OAuthHandlerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const providerCallback = deps.provider.callback();
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    // The keys in Postgres, not the ones oidc-provider was given at this replica's start: a replica
    // that started before another one rotated the key still publishes the key the other signs with.
    if (path === JWKS_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
      return answer(res, deps.log, async () => ({ status: 200, type: JWK_SET, body: { keys: await deps.publishedKeys() } }));
    }
    const consent = CONSENT.exec(path);
    if (!consent) return void providerCallback(req, res);
    const uid = consent[1]!;
    const details = consent[2] !== undefined;
    answer(res, deps.log, async () => {
      if (req.method === 'GET' && !details) {
        return { status: 303, location: `/console/oauth/consent/${uid}` };
      }
      if (req.method === 'GET' && details) {
        const person = await personOf(deps, req);
        return { status: 200, body: await consentDetails(deps, person, req, res, uid) };
      }
      if (req.method === 'POST' && !details) {
        const person = await personOf(deps, req);
        const parsed = ConsentDecisionBody.safeParse(await jsonBody(req));
        if (!parsed.success) {
          throw new ApiError(
            'invalid_request',
            'the consent is {decision: "deny"} or {decision: "allow", agentId, grantId, tools, expiresAt?}',
            {
              errors: parsed.error.issues.map((issue) => ({ path: `/${issue.path.join('/')}`, message: issue.message })),
            },
          );
        }
        return { status: 200, body: await decideConsent(deps, person, req, res, uid, parsed.data) };
      }
      throw new ApiError('method_not_allowed');
    });
  };
}

async function personOf(deps: OAuthHandlerDeps, req: IncomingMessage) {
  const principal = await deps.resolveCredential(bearerToken({ authorization: req.headers.authorization }));
  if (!principal) throw unauthenticated();
  return acceptOnly(principal, ['human'] as const);
}

async function jsonBody(req: IncomingMessage): Promise<unknown> {
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw new ApiError('unsupported_media_type');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError('payload_too_large', `the consent is at most ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new ApiError('invalid_request', 'the body is not JSON');
  }
}

type Answer = { status: number; body?: unknown; location?: string; type?: string };
const JWK_SET = 'application/jwk-set+json; charset=utf-8';

function answer(res: ServerResponse, log: Logger, run: () => Promise<Answer>): void {
  run().then(
    ({ status, body, location, type }) => {
      res.setHeader('Cache-Control', 'no-store');
      if (location) res.setHeader('Location', location);
      if (body === undefined) return void res.writeHead(status).end();
      res.writeHead(status, { 'Content-Type': type ?? 'application/json' }).end(JSON.stringify(body));
    },
    (error: unknown) => {
      const problem =
        error instanceof ApiError
          ? error
          : isDependencyFailure(error)
            ? new ApiError('dependency_unavailable')
            : new ApiError('internal_error');
      if (problem.code === 'internal_error') log.error({ err: error }, 'consent failed');
      if (res.headersSent) return void res.destroy();
      res.writeHead(problem.status, { 'Content-Type': 'application/problem+json', 'Cache-Control': 'no-store', ...problem.headers }).end(
        JSON.stringify({
          type: `https://grant-broker.dev/problems/${problem.code.replaceAll('_', '-')}`,
          title: PROBLEMS[problem.code].title,
          status: problem.status,
          detail: problem.detail ?? PROBLEMS[problem.code].title,
          code: problem.code,
          ...problem.extensions,
        }),
      );
    },
  );
}
