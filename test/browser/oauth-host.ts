import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Page } from '@playwright/test';

export interface HostOptions {
  /** The client name a person reads on the consent page. */
  name: string;
  /** Where the authorization server sends the person back. */
  redirectUrl: string;
  /** A Client ID Metadata Document's URL, instead of registering dynamically. */
  clientMetadataUrl?: string;
  /** The resource, as a host names a server it was configured with; unset, the SDK takes the gateway's protected-resource document's. */
  resource?: string;
}

/**
 * An MCP host's side of the SDK's OAuth client: where it keeps its registration, verifier and
 * tokens, and how it sends the person to the authorization server (here: a Playwright page).
 */
export class PlaywrightHost implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  readonly clientMetadataUrl?: string;
  readonly validateResourceURL?: () => Promise<URL>;
  private verifier = '';

  constructor(
    private readonly page: Page,
    private readonly options: HostOptions,
  ) {
    this.clientMetadataUrl = options.clientMetadataUrl;
    const { resource } = options;
    if (resource) this.validateResourceURL = async () => new URL(resource);
  }

  get redirectUrl() {
    return this.options.redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.name,
      redirect_uris: [this.options.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return 'host-state';
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    await this.page.goto(url.href);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}
