import { GATEWAY_SCOPE } from './access-tokens';

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * The gateway as an OAuth protected resource (CONTRACT §20, RFC 9728). Its resource URI is its
 * public URL (`listen.publicUrl`, its path ending in `/mcp`), else the address it listens on.
 */
export class ProtectedResource {
  constructor(private readonly publicUrl: () => string) {}

  /** The resource URI: the public URL without query or fragment, its path ending in `/mcp`. */
  resource(): string {
    const url = new URL(this.publicUrl());
    url.search = '';
    url.hash = '';
    if (!url.pathname.endsWith('/mcp')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/mcp`;
    return url.href;
  }

  /** Where the metadata document is: the origin's well-known path followed by the resource's path (RFC 9728 §3.1). */
  metadataUrl(): string {
    const url = new URL(this.resource());
    return `${url.origin}${WELL_KNOWN}${url.pathname}`;
  }

  /** Whether a request path asks for the metadata document: the origin's well-known path, with or without the resource's path. */
  isMetadataPath(path: string): boolean {
    // Asked of every request: an agent's `/mcp` is answered without working out the resource URI.
    if (!path.startsWith(WELL_KNOWN)) return false;
    return path === WELL_KNOWN || path === `${WELL_KNOWN}/mcp` || path === `${WELL_KNOWN}${new URL(this.resource()).pathname}`;
  }

  /** The metadata document: this resource, its one authorization server, the one scope, tokens in the header only. */
  metadata(issuer: string) {
    return {
      resource: this.resource(),
      authorization_servers: [issuer],
      scopes_supported: [GATEWAY_SCOPE],
      bearer_methods_supported: ['header'],
      resource_name: 'MCP gateway',
    };
  }

  /** The `WWW-Authenticate` challenge of a 401: where to learn how to get a token, and `invalid_token` when one was presented. */
  challenge(presented: boolean): string {
    const error = presented ? ', error="invalid_token"' : '';
    return `Bearer resource_metadata="${this.metadataUrl()}", scope="${GATEWAY_SCOPE}"${error}`;
  }
}
