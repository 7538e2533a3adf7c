import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { KeyRing } from '../credentials/sealed-box';
import type { Database } from '../db/database';
import type { Clock } from '../kernel/clock';
import type { Logger } from '../kernel/log';
import { postgresAdapter } from './adapter';
import { clientMetadataFetch } from './client-metadata-fetch';
import { inHostRealm, oidcProvider } from './provider-module';
import { consentedGrant } from './repository';
import { registeredResources } from './resources';
import { currentSigningKeys } from './signing-keys';

export interface AuthorizationServerSettings {
  /** PUBLIC_URL: the issuer, and the origin of every endpoint. */
  issuer: string;
  accessTokenTtlMs: number;
  refreshTokenTtlMs: number;
  allowPrivateClientMetadata: boolean;
  signingKeyRotationMs: number;
  /** Certificates trusted beside Node's store for client metadata documents (tests). */
  clientMetadataCa?: string;
}

export interface AuthorizationServerDeps {
  db: Database;
  clock: Clock;
  keys: KeyRing;
  log: Logger;
  settings: AuthorizationServerSettings;
}

/**
 * The published keys (the metadata's `jwks_uri`), served by handler.ts from Postgres rather than by
 * oidc-provider from the keys it was given at this replica's start.
 */
export const JWKS_PATH = '/oauth/jwks';

/** Where the authorization server's endpoints live, under the issuer. */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: JWKS_PATH,
  end_session: '/oauth/session/end',
  introspection: '/oauth/introspect',
  userinfo: '/oauth/userinfo',
} as const;

/** The consent page's path for an interaction: handler.ts sends the browser on to the console's page. */
export const consentPath = (uid: string) => `/oauth/consent/${encodeURIComponent(uid)}`;

/** The only scope a gateway knows: using its MCP endpoint. Consent, not scopes, says what a host may do. */
export const GATEWAY_SCOPE = 'mcp';

const seconds = (ms: number) => Math.max(1, Math.floor(ms / 1000));

/**
 * The OAuth 2.1 authorization server for MCP hosts (CONTRACT §20), configured from oidc-provider's
 * features rather than written: RFC 8414 metadata, PKCE S256 required, dynamic registration
 * (RFC 7591), Client ID Metadata Documents, resource indicators (RFC 8707) restricted to the
 * registered gateway resources, `iss` in the authorization response (RFC 9207), JWT access tokens
 * bound to their resource, rotating refresh tokens (reuse revokes the family), revocation.
 *
 * The account a token stands for is the child grant a consent created (`sub`); the agent it acts
 * as rides along as `agent_id`. Every connection is consented: the login prompt is always asked
 * until the consent page has answered, so a host never gets a token for a grant nobody picked.
 */
export async function createAuthorizationServer(deps: AuthorizationServerDeps): Promise<Provider> {
  const { default: ProviderClass, errors, interactionPolicy } = oidcProvider();
  const { db, clock, settings } = deps;
  const accessTokenTtl = seconds(settings.accessTokenTtlMs);
  const signingKeys = await currentSigningKeys(
    db,
    deps.keys,
    // Published keys verify tokens still alive: one previous key outlives any access token.
    { rotateAfterMs: settings.signingKeyRotationMs, keepPrevious: 1 },
    clock.now(),
  );

  const registered = registeredResources(db, { rememberMs: 60_000, maxRemembered: 1_000 });
  // A token request asks for its child grant twice (the account, then the token's claims): one read per request.
  const grantsOfRequest = new WeakMap<object, Map<string, ReturnType<typeof consentedGrant>>>();
  const grantOf = (ctx: object, grantId: string) => {
    const read = grantsOfRequest.get(ctx) ?? new Map<string, ReturnType<typeof consentedGrant>>();
    grantsOfRequest.set(ctx, read);
    if (!read.has(grantId)) read.set(grantId, consentedGrant(db, grantId));
    return read.get(grantId)!;
  };

  const policy = interactionPolicy.base();
  policy
    .get('login')!
    .checks.add(
      new interactionPolicy.Check('consent_each_connection', 'every connection of a host is consented on the consent page', (ctx) =>
        ctx.oidc.result ? interactionPolicy.Check.NO_NEED_TO_PROMPT : interactionPolicy.Check.REQUEST_PROMPT,
      ),
    );

  const configuration: Configuration = {
    adapter: postgresAdapter(db, clock),
    jwks: { keys: signingKeys as never },
    cookies: {
      keys: deps.keys.derivedKeys('oauth-cookies').map((key) => key.toString('base64url')),
      long: { signed: true, sameSite: 'lax' },
      short: { signed: true, sameSite: 'lax' },
    },
    findAccount: async (ctx, sub) => {
      const grant = await grantOf(ctx, sub);
      return grant ? { accountId: grant.id, claims: () => ({ sub: grant.id }) } : undefined;
    },
    extraClientMetadata: {
      // Listed only so the check below runs on every registration and metadata document; nothing new is accepted.
      properties: ['client_name'],
      validator: (_ctx, key, _value, metadata) => {
        if (key === 'client_name' && holdsLoneSurrogate(metadata)) {
          throw new errors.InvalidClientMetadata('client metadata text must be well-formed Unicode (it holds a lone surrogate)');
        }
      },
    },
    responseTypes: ['code'],
    // The keys are P-256: whatever a client registers is signed with ES256.
    clientDefaults: { id_token_signed_response_alg: 'ES256', grant_types: ['authorization_code'], response_types: ['code'] },
    pkce: { required: () => true },
    scopes: [GATEWAY_SCOPE],
    extraParams: {
      // An authorization that cannot end in a gateway token is refused before anyone is asked to
      // consent: at the host's redirect URI (checked by the time these run), as invalid_scope.
      scope: (_ctx, value) => {
        if (!(typeof value === 'string' && value.split(' ').includes(GATEWAY_SCOPE)))
          throw new errors.InvalidScope(`ask for the scope ${GATEWAY_SCOPE}`, GATEWAY_SCOPE);
      },
    },
    routes: OAUTH_ROUTES,
    interactions: { url: (_ctx, interaction) => consentPath(interaction.uid), policy },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      introspection: { enabled: false },
      // The draft this library implements, acknowledged so an update to another draft fails start rather than changing silently.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      resourceIndicators: {
        enabled: true,
        // A missing resource is refused, never defaulted: a token is always for one gateway.
        defaultResource: (_ctx, _client, oneOf) => {
          if (oneOf) return oneOf;
          throw new errors.InvalidTarget('send the gateway as the resource parameter (RFC 8707)');
        },
        useGrantedResource: () => true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (!(await registered(resource))) throw new errors.InvalidTarget('the resource is not a registered gateway');
          return {
            scope: GATEWAY_SCOPE,
            audience: resource,
            accessTokenTTL: accessTokenTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    clientBasedCORS: (_ctx, origin, client) =>
      origin !== 'null' && client.clientAuthMethod === 'none' && client.redirectUris!.some((uri) => URL.parse(uri)?.origin === origin),
    extraTokenClaims: async (ctx, token) => {
      const accountId = 'accountId' in token ? token.accountId : undefined;
      const grant = accountId ? await grantOf(ctx, accountId) : undefined;
      // A plain object of Node's realm: oidc-provider checks the answer by its constructor.
      return grant ? inHostRealm({ agent_id: grant.created_by }) : undefined;
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Asked just before the presented refresh token is spent. The library compares the resource with
    // what was granted only after rotating, so a refresh for another resource would spend the host's
    // token and store one nobody holds (the host's next refresh then reads as a reuse and ends the
    // family): such a request is refused here, while the host's token is still unspent.
    rotateRefreshToken: (ctx) => {
      const asked = [ctx.oidc.params?.resource].flat().filter((value): value is string => typeof value === 'string');
      const presented = ctx.oidc.entities.RefreshToken as { resourceIndicators?: Set<string> } | undefined;
      if (asked.length > 1 || (asked.length === 1 && !presented?.resourceIndicators?.has(asked[0]!)))
        throw new errors.InvalidTarget('the refresh token was not granted for this resource');
      return true;
    },
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: accessTokenTtl,
      AuthorizationCode: 60,
      RefreshToken: seconds(settings.refreshTokenTtlMs),
      Grant: seconds(settings.refreshTokenTtlMs),
      Interaction: 10 * 60,
      Session: 10 * 60,
    },
    fetch: clientMetadataFetch({
      allowPrivate: settings.allowPrivateClientMetadata,
      maxBytes: CLIENT_METADATA_MAX_BYTES,
      timeoutMs: 2_500,
      ca: settings.clientMetadataCa,
    }),
    fetchResponseBodyLimits: { 'client_id metadata document': CLIENT_METADATA_MAX_BYTES },
    renderError: (ctx: KoaContextWithOIDC, out) => {
      ctx.type = 'application/json';
      ctx.body = { error: out.error, error_description: out.error_description };
    },
  };
  const provider = new ProviderClass(settings.issuer, inHostRealm(configuration));
  // Behind a proxy the issuer's scheme and host are PUBLIC_URL's, whatever the socket says.
  provider.proxy = true;
  // Why a token request was refused, for the operator (the client sees only the error code).
  provider.on('grant.error', (_ctx, error) =>
    deps.log.debug({ reason: (error as { error_detail?: string }).error_detail ?? (error as Error).message }, 'token request refused'),
  );
  provider.on('server_error', (_ctx, error) => deps.log.error({ err: error }, 'authorization server error'));
  return provider;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Whether a client's metadata holds a string with half a surrogate pair: JSON lets a host send
 * one (`"\ud800"`), Postgres cannot store it in the state's JSON, and no name needs one. Such a
 * client is refused as invalid metadata (400), at registration and when its document is fetched.
 */
function holdsLoneSurrogate(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (depth > 8 || value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([key, entry]) => LONE_SURROGATE.test(key) || holdsLoneSurrogate(entry, depth + 1));
}

/** A client metadata document is a few hundred bytes: anything past this is refused. */
export const CLIENT_METADATA_MAX_BYTES = 16 * 1024;
