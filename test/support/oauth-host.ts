import {
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata, OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';

/** Where a test host asks to be sent back: nothing listens there, the redirect is read off the answer. */
export const HOST_REDIRECT = 'http://127.0.0.1:9/callback';

/**
 * A public-client host asking the service's authorization server for tokens for one resource,
 * through the MCP SDK's own OAuth functions (as a host that never saw our code would).
 */
export interface OAuthHost {
  metadata: AuthorizationServerMetadata;
  register(name: string, extra?: Record<string, unknown>): Promise<OAuthClientInformationFull>;
  start(client: OAuthClientInformationFull, state?: string): ReturnType<typeof startAuthorization>;
  exchange(client: OAuthClientInformationFull, code: string, codeVerifier: string): ReturnType<typeof exchangeAuthorization>;
  refresh(client: OAuthClientInformationFull, refreshToken: string): ReturnType<typeof refreshAuthorization>;
}

export async function oauthHost(issuer: string, resource: string): Promise<OAuthHost> {
  const metadata = (await discoverAuthorizationServerMetadata(issuer))!;
  return {
    metadata,
    register: (name, extra = {}) =>
      registerClient(issuer, {
        metadata,
        clientMetadata: {
          client_name: name,
          redirect_uris: [HOST_REDIRECT],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
          ...extra,
        },
      }),
    start: (client, state) =>
      startAuthorization(issuer, {
        metadata,
        clientInformation: client,
        redirectUrl: HOST_REDIRECT,
        resource: new URL(resource),
        scope: 'mcp',
        ...(state ? { state } : {}),
      }),
    exchange: (client, code, codeVerifier) =>
      exchangeAuthorization(issuer, {
        metadata,
        clientInformation: client,
        authorizationCode: code,
        codeVerifier,
        redirectUri: HOST_REDIRECT,
        resource: new URL(resource),
      }),
    refresh: (client, refreshToken) =>
      refreshAuthorization(issuer, { metadata, clientInformation: client, refreshToken, resource: new URL(resource) }),
  };
}
