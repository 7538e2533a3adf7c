import { createHash } from 'node:crypto';
import { createAppAuth } from '@octokit/auth-app';
import { request as octokitRequest } from '@octokit/request';
import { Counter } from 'prom-client';
import { LruCache } from '../kernel/lru';
import { metricsRegistry } from '../kernel/metrics';
import type { Clock } from '../kernel/clock';
import { boundedFetch, GitHubUnreachableError } from './bounded-fetch';
import type { GitHubApps } from './settings';

/** A token is handed out only while it has more than this left; past it, a new one is minted. */
export const MIN_REMAINING_MS = 5 * 60_000;
/** Distinct (app, installation, repository, permissions) kept: a few hundred bytes each. */
const CACHED_TOKENS = 10_000;

export interface MintRequest {
  app: string;
  /** GitHub's installation id (digits). */
  installationId: string;
  /** `owner/name`, canonical. */
  repository: string;
  permissions: Readonly<Record<string, string>>;
}

export interface MintedCredential {
  token: string;
  expiresAt: string;
  repositories: string[];
  permissions: Record<string, string>;
}

/** What a credential cost: a token reused from memory, one GitHub minted, or a request that failed. */
const credentialRequests = new Counter({
  name: 'github_installation_tokens_total',
  help: 'Installation tokens handed to checks, by source: reused, minted (one GitHub request) or failed',
  labelNames: ['result'],
  registers: [metricsRegistry],
});

/** No credential can be had for the call right now (GitHub refused, was slow, or answered amiss). */
export class CredentialUnavailableError extends Error {}

/** The first 8 bytes of the token's SHA-256: what the call record keeps of it. */
export function fingerprintBytes(token: string): Buffer {
  return createHash('sha256').update(token).digest().subarray(0, 8);
}

/** `sha256:` and the first 16 hex digits of the token's SHA-256: the fingerprint as the API shows it. */
export function fingerprintOf(token: string): string {
  return `sha256:${fingerprintBytes(token).toString('hex')}`;
}

// auth-app keeps a cache of its own; ours (below) decides reuse on the service's clock, so its is off.
const NO_CACHE = { get: () => '', set: () => undefined };
const SILENT = { warn: () => undefined };

/**
 * Installation access tokens minted per (app, installation, repository, permissions) through
 * @octokit/auth-app: the app's JWT (RS256, its private key) and `POST
 * /app/installations/{id}/access_tokens` with exactly one repository and the tool's permissions.
 * A token is reused while more than 5 minutes of it remain, by the injected clock; concurrent
 * checks that need the same one share one request. Tokens live only here, in memory: never
 * logged, stored or put in an error.
 */
export class InstallationTokens {
  private readonly cache = new LruCache<string, { credential: MintedCredential; expiresAtMs: number }>(CACHED_TOKENS);
  private readonly inFlight = new Map<string, Promise<MintedCredential>>();
  private readonly fetch: typeof fetch;

  constructor(
    private readonly apps: GitHubApps,
    private readonly clock: Clock,
    limits: { timeoutMs: number; maxBytes: number },
  ) {
    this.fetch = boundedFetch(limits);
  }

  async mint(wanted: MintRequest): Promise<MintedCredential> {
    const key = JSON.stringify([wanted.app, wanted.installationId, wanted.repository.toLowerCase(), sorted(wanted.permissions)]);
    const cached = this.cache.get(key);
    if (cached && cached.expiresAtMs - this.clock.now() > MIN_REMAINING_MS) {
      credentialRequests.labels('reused').inc();
      return cached.credential;
    }
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.request(wanted)
        .then((credential) => {
          const expiresAtMs = Date.parse(credential.expiresAt);
          // A token that arrives with 5 minutes or less is not handed out: the call might outlive it.
          if (!(expiresAtMs - this.clock.now() > MIN_REMAINING_MS)) {
            throw new CredentialUnavailableError('GitHub issued a token that expires too soon');
          }
          this.cache.set(key, { credential, expiresAtMs });
          credentialRequests.labels('minted').inc();
          return credential;
        })
        .catch((error: unknown) => {
          credentialRequests.labels('failed').inc();
          throw error;
        })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async request(wanted: MintRequest): Promise<MintedCredential> {
    const app = this.apps.get(wanted.app);
    if (!app) throw new CredentialUnavailableError('the connection names an app this deployment does not configure');
    const [owner, name] = wanted.repository.split('/') as [string, string];
    // The raw answer, for what auth-app's summary leaves out: each repository's owner.
    let answer: unknown;
    // Why GitHub could not be reached, when it could not (@octokit/request reports it as a 500).
    let unreachable: GitHubUnreachableError | undefined;
    const boundedFetch: typeof fetch = async (input, init) => {
      try {
        return await this.fetch(input, init);
      } catch (error) {
        if (error instanceof GitHubUnreachableError) unreachable = error;
        throw error;
      }
    };
    const request = octokitRequest.defaults({
      baseUrl: app.apiUrl,
      headers: { 'user-agent': 'grant-broker', 'x-github-api-version': '2022-11-28' },
      request: {
        fetch: boundedFetch,
        hook: async (send: typeof octokitRequest, options: Parameters<typeof octokitRequest>[0]) => {
          const response = await send(options);
          answer = response.data;
          return response;
        },
      },
    });
    const auth = createAppAuth({ appId: app.appId, privateKey: app.privateKey.pem(), request, cache: NO_CACHE, log: SILENT });
    try {
      await auth({
        type: 'installation',
        installationId: Number(wanted.installationId),
        repositoryNames: [name],
        permissions: { ...wanted.permissions },
      });
    } catch (error) {
      // Only a status and a fixed text leave here: the error's request carries the app's JWT.
      if (unreachable) throw new CredentialUnavailableError(`GitHub could not be reached: ${unreachable.message}`);
      const { status, response } = error as { status?: unknown; response?: unknown };
      if (typeof status === 'number' && response !== undefined)
        throw new CredentialUnavailableError(`GitHub refused the token request (${status})`);
      throw new CredentialUnavailableError('GitHub could not be reached');
    }
    return checkedAnswer(answer, owner, name, wanted.permissions);
  }
}

/**
 * GitHub's answer, held to what was asked: exactly the one repository (its owner too: the request
 * names only the repository, and an installation on another account must not make a token for
 * its own repository of that name) and no permission beyond those asked for.
 */
function checkedAnswer(answer: unknown, owner: string, name: string, asked: Readonly<Record<string, string>>): MintedCredential {
  const data = answer as { token?: unknown; expires_at?: unknown; repositories?: unknown; permissions?: unknown } | undefined;
  const repositories = Array.isArray(data?.repositories) ? (data.repositories as Array<{ full_name?: unknown }>) : [];
  const fullName = `${owner}/${name}`.toLowerCase();
  const permissions = (typeof data?.permissions === 'object' && data.permissions !== null ? data.permissions : {}) as Record<
    string,
    unknown
  >;
  const exact =
    typeof data?.token === 'string' &&
    data.token.length > 0 &&
    typeof data.expires_at === 'string' &&
    Number.isFinite(Date.parse(data.expires_at)) &&
    repositories.length === 1 &&
    String(repositories[0]!.full_name).toLowerCase() === fullName &&
    Object.entries(permissions).every(([permission, level]) => asked[permission] === level || IMPLIED[permission] === level);
  if (!exact) throw new CredentialUnavailableError("GitHub's token does not match what was asked for");
  return {
    token: data.token as string,
    expiresAt: new Date(Date.parse(data.expires_at as string)).toISOString(),
    repositories: [String(repositories[0]!.full_name)],
    permissions: Object.fromEntries(Object.entries(permissions).map(([k, v]) => [k, String(v)])),
  };
}

/** What GitHub adds to every installation token: reading the repository's metadata. */
const IMPLIED: Readonly<Record<string, string>> = { metadata: 'read' };

function sorted(permissions: Readonly<Record<string, string>>): Array<[string, string]> {
  return Object.entries(permissions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
