import type { IncomingMessage, ServerResponse } from 'node:http';
import jwt from 'jsonwebtoken';
import { isDependencyFailure } from '../kernel/dependency';
import type { Logger } from '../kernel/log';
import type { ConsoleLinks } from './console-links';
import type { ConsoleFile } from './static-files';

/** What the console needs to know of the service's sign-in configuration. */
export interface ConsoleSettings {
  /** OpenID Connect: the browser signs in at this issuer (authorization code with PKCE). */
  oidc?: { issuer: string; clientId: string };
  /**
   * Development only: one-time links (`npm run admin -- console-link`) are traded for a human JWT
   * signed with this HS256 secret, the one the API verifies. Absent: links are refused (404).
   */
  linkSessions?: { secret: string; ttlSeconds: number };
}

export interface ConsoleDeps {
  files: Map<string, ConsoleFile>;
  links: ConsoleLinks;
  settings: ConsoleSettings;
  log: Logger;
}

/** A request handler ahead of the API's: answers (true) for /console and below, else leaves it (false). */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

const MAX_SESSION_BODY = 1024;

/**
 * The Content-Security-Policy of every console answer: scripts, styles and everything else from
 * this origin only, never inline (React writes text as text nodes, so agent-supplied text cannot
 * become markup, and this policy refuses whatever slipped through anyway); no framing; the
 * identity provider is the one other origin the console may call (discovery and its token
 * endpoint, for the PKCE code exchange).
 */
export function contentSecurityPolicy(settings: ConsoleSettings): string {
  const issuerOrigin = settings.oidc ? ` ${new URL(settings.oidc.issuer).origin}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${issuerOrigin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function createConsoleHandler(deps: ConsoleDeps): ConsoleHandler {
  const csp = contentSecurityPolicy(deps.settings);
  const config = JSON.stringify({ oidc: deps.settings.oidc ?? null, links: Boolean(deps.settings.linkSessions) });

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}) => {
    res.writeHead(status, {
      'Content-Type': type,
      'Content-Length': String(Buffer.byteLength(body)),
      'Content-Security-Policy': csp,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cache-Control': 'no-store',
      ...headers,
    });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  };
  const problem = (res: ServerResponse, status: number, code: string, detail: string, headers: Record<string, string> = {}) =>
    send(
      res,
      status,
      'application/problem+json',
      JSON.stringify({ type: `urn:grant-broker:problem:${code}`, title: code.replaceAll('_', ' '), status, detail, code }),
      headers,
    );

  const serveFile = (req: IncomingMessage, res: ServerResponse, file: ConsoleFile) => {
    const cache = file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache';
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, { ETag: file.etag, 'Cache-Control': cache, 'Content-Security-Policy': csp });
      res.end();
      return;
    }
    send(res, 200, file.type, file.body, { ETag: file.etag, 'Cache-Control': cache });
  };

  const startSession = async (req: IncomingMessage, res: ServerResponse) => {
    const sessions = deps.settings.linkSessions;
    if (!sessions) return problem(res, 404, 'not_found', 'console links are for development: sign in with OpenID Connect');
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      return problem(res, 415, 'unsupported_media_type', 'send application/json');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_SESSION_BODY) return problem(res, 413, 'payload_too_large', `at most ${MAX_SESSION_BODY} bytes`);
      chunks.push(chunk);
    }
    let code: unknown;
    try {
      code = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code?: unknown } | null)?.code;
    } catch {
      return problem(res, 400, 'invalid_request', 'the body is not JSON');
    }
    if (typeof code !== 'string') return problem(res, 400, 'invalid_request', 'send {"code": "csl_…"}');
    const userId = await deps.links.redeem(code);
    if (!userId) {
      return problem(res, 401, 'unauthenticated', 'this link is unknown, used or expired: ask for a new one', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    const token = jwt.sign({}, sessions.secret, { algorithm: 'HS256', subject: userId, expiresIn: sessions.ttlSeconds });
    const expiresAt = new Date(Date.now() + sessions.ttlSeconds * 1000).toISOString();
    send(res, 200, 'application/json', JSON.stringify({ token, userId, expiresAt }));
  };

  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path !== '/console' && !path.startsWith('/console/')) return false;
    const method = req.method ?? 'GET';
    if (path === '/console/session') {
      if (method !== 'POST') {
        problem(res, 405, 'method_not_allowed', 'use POST', { Allow: 'POST' });
        return true;
      }
      startSession(req, res).catch((error: unknown) => {
        if (!isDependencyFailure(error)) deps.log.error({ err: error }, 'console sign-in failed');
        if (!res.headersSent) problem(res, 503, 'dependency_unavailable', 'sign-in is unavailable; try again');
      });
      return true;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      problem(res, 405, 'method_not_allowed', 'use GET', { Allow: 'GET, HEAD' });
      return true;
    }
    if (path === '/console') {
      res.writeHead(308, { Location: '/console/', 'Content-Security-Policy': csp });
      res.end();
      return true;
    }
    if (path === '/console/config.json') {
      send(res, 200, 'application/json', config);
      return true;
    }
    const file = deps.files.get(path.slice('/console/'.length));
    const index = deps.files.get('index.html');
    if (file) serveFile(req, res, file);
    // A page of the console (/console/approvals, /console/pods/pod_…/grants) is the app's shell;
    // the app routes it. A missing asset is a plain 404, never the shell.
    else if (index && !path.startsWith('/console/assets/')) serveFile(req, res, index);
    else if (!index) problem(res, 404, 'not_found', 'the console is not built: run npm run build');
    else problem(res, 404, 'not_found', 'no such file');
    return true;
  };
}
