import type { RequestListener } from 'node:http';
import type { Config } from './config';
import { publicBaseUrl } from './config';
import { ConsoleLinks } from './console/console-links';
import { createConsoleHandler } from './console/handler';
import { loadConsoleFiles } from './console/static-files';
import { credentialAuthenticators, type CredentialResolver } from './credentials/authenticators';
import type { KeyRing } from './credentials/sealed-box';
import type { Database } from './db/database';
import { createApp, type HttpApp } from './http/app';
import { readApiDecisions } from './http/decisions';
import { buildOpenApiDocument } from './http/openapi';
import type { Clock } from './kernel/clock';
import type { Logger } from './kernel/log';
import type { AccessTokens } from './oauth/access-tokens';
import { isAuthorizationServerPath, oauthHandler, type OAuthHandlerDeps } from './oauth/handler';
import { createAuthorizationServer } from './oauth/provider';
import { agentWithId } from './oauth/repository';
import type { createTracing } from './operations/tracing';
import type { PolicyEngine } from './policy/engine';
import type { RedisClient } from './redis/client';
import { allRoutes, type Services } from './routes';
import type { SpeedUps } from './speedups';

/** How long a console session that a one-time link started lasts (development). */
const CONSOLE_SESSION_SECONDS = 8 * 60 * 60;

/**
 * The HTTP front, on one port: the web console's files and sign-in links first, then the OAuth
 * authorization server for MCP hosts, then the API (Koa, every route of `routes.ts`), with
 * /metrics on a port of its own when METRICS_PORT says so. Part of the composition root.
 */
export async function composeFront(input: {
  config: Config;
  log: Logger;
  clock: Clock;
  db: Database;
  redis: RedisClient;
  policy: PolicyEngine;
  keyRing: KeyRing;
  services: Services;
  grants: OAuthHandlerDeps['grants'];
  resolveCredential: CredentialResolver;
  hostTokens: AccessTokens;
  speedUps: SpeedUps;
  tracing: ReturnType<typeof createTracing>;
  /** Certificates trusted for client metadata documents beside Node's store (tests). */
  clientMetadataCa?: string;
}) {
  const { config, log, db, hostTokens } = input;
  const routes = allRoutes(
    input.services,
    credentialAuthenticators(input.resolveCredential, async (token) => {
      const claims = await hostTokens.verify(token);
      if (!claims) return claims;
      // The agent as its runtime token would name it: the host acts for it, on its one grant.
      const agent = await agentWithId(db, claims.agentId);
      if (!agent) return null;
      return {
        kind: 'agent',
        agentId: agent.id,
        podId: agent.pod_id,
        agentName: agent.name,
        tokenId: 'oauth',
        onlyGrantId: claims.grantId,
      };
    }),
  );
  // With METRICS_PORT, /metrics leaves the API port for an app (and port) of its own.
  const metricsApart = config.METRICS_PORT !== undefined;
  let openApi: unknown;
  const apiDecisions = readApiDecisions();
  const appOptions = { log, strictContracts: config.NODE_ENV === 'test', front: input.speedUps.frontHandler };
  const metricsApp = metricsApart ? createApp([routes.metrics], appOptions) : undefined;
  if (config.NODE_ENV === 'production' && !config.METRICS_TOKEN && !metricsApart) {
    log.warn('/metrics is open to anyone who reaches the API port: set METRICS_TOKEN or METRICS_PORT');
  }

  // The web console, ahead of the API on the same port (src/console/).
  const consoleLinks = new ConsoleLinks(input.redis);
  const consoleHandler = createConsoleHandler({
    files: loadConsoleFiles(config.CONSOLE_DIR),
    links: consoleLinks,
    log: log.child({ component: 'console' }),
    settings: {
      oidc: config.OIDC_ISSUER && config.OIDC_CLIENT_ID ? { issuer: config.OIDC_ISSUER, clientId: config.OIDC_CLIENT_ID } : undefined,
      // One-time links sign in with the development secret the API verifies; never in production.
      linkSessions:
        config.NODE_ENV !== 'production' && !config.JWT_JWKS_URI
          ? { secret: config.JWT_SECRET, ttlSeconds: CONSOLE_SESSION_SECONDS }
          : undefined,
    },
  });
  // The OAuth authorization server for MCP hosts, on the same port (src/oauth/).
  const authorizationServer = await createAuthorizationServer({
    db,
    clock: input.clock,
    keys: input.keyRing,
    log: log.child({ component: 'oauth' }),
    settings: {
      issuer: publicBaseUrl(config),
      accessTokenTtlMs: config.OAUTH_ACCESS_TOKEN_TTL_MS,
      refreshTokenTtlMs: config.OAUTH_REFRESH_TOKEN_TTL_MS,
      allowPrivateClientMetadata: config.OAUTH_ALLOW_PRIVATE_CLIENT_METADATA,
      signingKeyRotationMs: config.OAUTH_SIGNING_KEY_ROTATION_MS,
      clientMetadataCa: input.clientMetadataCa,
    },
  });
  const oauth = oauthHandler({
    db,
    policy: input.policy,
    provider: authorizationServer,
    publishedKeys: () => hostTokens.publishedKeys(),
    grants: input.grants,
    resolveCredential: input.resolveCredential,
    log: log.child({ component: 'oauth' }),
  });
  const apiApp = createApp(metricsApart ? routes.api : [...routes.api, routes.metrics], {
    ...appOptions,
    passThrough: routes.passThrough,
    openApi: () => (openApi ??= buildOpenApiDocument([...routes.api, routes.metrics], apiDecisions, routes.passThrough)),
  });
  const { tracing } = input;
  const app: HttpApp = {
    callback() {
      const api = apiApp.callback();
      const listener: RequestListener = (req, res) => {
        if (consoleHandler(req, res)) return;
        if (isAuthorizationServerPath((req.url ?? '/').split('?')[0]!)) oauth(req, res);
        else api(req, res);
      };
      return tracing ? tracing.inbound(listener) : listener;
    },
  };
  return { app, metricsApp, consoleLinks, authorizationServer };
}
