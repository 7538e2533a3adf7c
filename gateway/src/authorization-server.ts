import { jose } from './esm';

/** What the gateway needs of the grant broker's authorization server metadata (RFC 8414). */
export interface AuthorizationServer {
  issuer: string;
  /** The published signing keys, fetched by `jose` and kept (fetched again for an unknown key, at most every 30 s). */
  keys: ReturnType<ReturnType<typeof jose>['createRemoteJWKSet']>;
}

const MAX_METADATA_BYTES = 64 * 1024;
const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 60_000;
const REFRESH_MS = 60 * 60_000;

/**
 * The authorization server of CONTRACT §20, learned from the grant broker itself:
 * `<brokerUrl>/.well-known/oauth-authorization-server`, fetched through the gateway's own bounded
 * `fetch`, at most 64 KiB, its `issuer` and `jwks_uri` absolute http(s) URLs. Until one fetch has
 * succeeded nothing signed by it is accepted (`current()` is undefined: fail closed); a failed fetch
 * is retried with a growing pause, and a good answer is fetched again every hour (the last good one
 * stays in use meanwhile).
 */
export class AuthorizationServerDiscovery {
  private known: AuthorizationServer | undefined;
  private jwksUri: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly brokerUrl: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  current(): AuthorizationServer | undefined {
    return this.known;
  }

  /** Starts discovery (answers once the first attempt has ended, whatever it found). */
  start(): Promise<void> {
    return this.attempt(FIRST_RETRY_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async attempt(retryMs: number): Promise<void> {
    let next = REFRESH_MS;
    try {
      const metadata = await this.fetchMetadata();
      if (metadata.issuer !== this.known?.issuer || metadata.jwksUri !== this.jwksUri) {
        this.jwksUri = metadata.jwksUri;
        this.known = {
          issuer: metadata.issuer,
          keys: jose().createRemoteJWKSet(new URL(metadata.jwksUri), { timeoutDuration: 5_000, cooldownDuration: 30_000 }),
        };
      }
    } catch (error) {
      next = retryMs;
      process.stderr.write(
        `mcp-gateway: the grant broker's OAuth metadata could not be read (${(error as Error).message}); hosts' access tokens are refused until it is\n`,
      );
    }
    if (this.stopped) return;
    const following = next === REFRESH_MS ? FIRST_RETRY_MS : Math.min(retryMs * 2, LAST_RETRY_MS);
    this.timer = setTimeout(() => void this.attempt(following), next).unref();
  }

  private async fetchMetadata(): Promise<{ issuer: string; jwksUri: string }> {
    const url = new URL('/.well-known/oauth-authorization-server', this.brokerUrl);
    const answer = await this.fetchImpl(url, { headers: { accept: 'application/json' }, redirect: 'error' });
    if (answer.status !== 200) throw new Error(`status ${answer.status}`);
    const length = Number(answer.headers.get('content-length') ?? 0);
    if (length > MAX_METADATA_BYTES) throw new Error('the document is too large');
    const text = await answer.text();
    if (Buffer.byteLength(text) > MAX_METADATA_BYTES) throw new Error('the document is too large');
    const document = JSON.parse(text) as { issuer?: unknown; jwks_uri?: unknown };
    const issuer = httpUrl(document.issuer);
    const jwksUri = httpUrl(document.jwks_uri);
    if (!issuer || !jwksUri) throw new Error('the document names no issuer or jwks_uri');
    return { issuer, jwksUri };
  }
}

function httpUrl(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const url = URL.parse(value);
  return url && (url.protocol === 'https:' || url.protocol === 'http:') ? value : undefined;
}
