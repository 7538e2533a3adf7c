import { createPrivateKey, randomBytes } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { developmentSecrets, developmentTrailKey, type DevelopmentSecrets } from './credentials/development-secrets';
import { ORIGIN_PATTERN } from './trail/tree/note';
import { decodeKey } from './credentials/sealed-box';
import { gitHubAppsSetting, resolveGitHubApps, type GitHubApps } from './github-apps/settings';

/** Base64 of exactly 32 bytes (`openssl rand -base64 32`). */
const sealingKey = z
  .string()
  .refine((value) => decodeKey(value) !== undefined, 'must be base64 of exactly 32 bytes (openssl rand -base64 32)');

/** A PKCS#8 PEM Ed25519 private key (`openssl genpkey -algorithm ed25519`); any other key stops the service at start. */
const ed25519Pem = z.string().refine((value) => {
  try {
    return createPrivateKey(value).asymmetricKeyType === 'ed25519';
  } catch {
    return false;
  }
}, 'must be a PKCS#8 PEM Ed25519 private key (openssl genpkey -algorithm ed25519)');

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** A URL of one of these schemes; any other (a typo, a MySQL URL) is named at start, not at first use. */
const urlOf = (...protocols: string[]) =>
  z
    .string()
    .url()
    .refine(
      (value) => !URL.canParse(value) || protocols.includes(new URL(value).protocol),
      `must be a ${protocols.map((p) => `${p}//`).join(' or ')} URL`,
    );

const environmentSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    // Loopback unless told otherwise: a development service is reachable from this machine only.
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: int(0, 65535).default(8080),
    // Envoy's external authorization over gRPC (src/protocols/ext-authz/grpc.ts): off unless set; on HOST.
    EXT_AUTHZ_GRPC_PORT: int(0, 65535).optional(),
    DATABASE_URL: urlOf('postgres:', 'postgresql:').default('postgres://postgres@127.0.0.1:5432/grant_broker'),
    DATABASE_POOL_MAX: int(1, 200).default(20),
    REDIS_URL: urlOf('redis:', 'rediss:').default('redis://127.0.0.1:6379/0'),
    REDIS_KEY_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9:_-]*$/)
      .default('gb:'),
    REDIS_COMMAND_TIMEOUT_MS: int(10, 10000).default(250),
    // A Redis Cluster instead of REDIS_URL: some of its nodes, host:port,host:port.
    REDIS_CLUSTER_NODES: z
      .string()
      .regex(/^\s*[\w.-]+:\d{1,5}(\s*,\s*[\w.-]+:\d{1,5})*\s*$/, 'a comma-separated list of host:port')
      .optional(),
    // Unset outside production: the installation's own, made once (src/credentials/development-secrets.ts).
    JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    JWT_JWKS_URI: urlOf('https:', 'http:').optional(),
    JWT_ISSUER: z.string().optional(),
    JWT_AUDIENCE: z.string().optional(),
    // The console's sign-in: OpenID Connect (authorization code with PKCE) at this issuer, with
    // this public client; the API then verifies its ID tokens through JWT_JWKS_URI.
    OIDC_ISSUER: urlOf('https:', 'http:').optional(),
    OIDC_CLIENT_ID: z.string().min(1).max(255).optional(),
    CONSOLE_DIR: z.string().default('build/console'),
    POLICY_WASM_PATH: z.string().default('build/policy/policy.wasm'),
    POLICY_WATCH: bool.default(true),
    // An OPA bundle instead of the bare module: a file, or a bundle server polled with ETag.
    POLICY_BUNDLE_PATH: z.string().optional(),
    POLICY_BUNDLE_URL: z.url({ protocol: /^https?$/ }).optional(),
    POLICY_BUNDLE_POLL_MS: int(100, 3_600_000).default(10_000),
    POLICY_BUNDLE_TIMEOUT_MS: int(100, 120_000).default(10_000),
    POLICY_BUNDLE_TOKEN: z.string().min(1).optional(),
    // The largest bundle fetched or read (16 MiB); it may unpack to 4 times that (src/policy/bundles/limits.ts).
    POLICY_BUNDLE_MAX_BYTES: int(1024, 1024 * 1024 * 1024).default(16 * 1024 * 1024),
    // A signed bundle issued before the serving one is refused unless this says a rollback is meant.
    POLICY_BUNDLE_ALLOW_ROLLBACK: bool.default(false),
    // The issued-at floor before the first bundle loads (RFC 3339): what the last run served, say.
    POLICY_BUNDLE_MIN_ISSUED_AT: z.iso
      .datetime({ offset: true })
      .transform((value) => Date.parse(value))
      .optional(),
    // Bundle signatures: PEM public key(s) (text or a file path; several for a rotation), or an HS256 secret.
    POLICY_BUNDLE_PUBLIC_KEY: z.string().min(1).optional(),
    POLICY_BUNDLE_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    // People (JWT subjects, comma-separated) who may use the policy playground besides pod owners and admins.
    SECURITY_ADMINS: z
      .string()
      .default('')
      .transform((value) =>
        value
          .split(',')
          .map((id) => id.trim())
          .filter((id) => id !== ''),
      ),
    DECISION_LOG: z.enum(['off', 'deny', 'all', 'sampled']).default('all'),
    DECISION_LOG_SAMPLE_RATE: z.coerce.number().min(0).max(1).default(0.1),
    // Upload decision events in gzip batches to a collector speaking OPA's decision log API.
    DECISION_LOG_URL: z.url({ protocol: /^https?$/ }).optional(),
    DECISION_LOG_TOKEN: z.string().min(1).optional(),
    DECISION_LOG_BUFFER_EVENTS: int(100, 10_000_000).default(100_000),
    // The same buffer in bytes (each event's JSON as uploaded): past either bound the oldest go.
    DECISION_LOG_BUFFER_BYTES: int(64 * 1024, 4 * 1024 ** 3).default(16 * 1024 ** 2),
    DECISION_LOG_BATCH_EVENTS: int(1, 100_000).default(1000),
    DECISION_LOG_FLUSH_MS: int(10, 600_000).default(1000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    MAX_DELEGATION_DEPTH: int(1, 64).default(8),
    // What one agent can make: live children of one grant, and attenuations per agent per window.
    MAX_LIVE_CHILDREN_PER_GRANT: int(1, 100_000).default(100),
    ATTENUATION_RATE_LIMIT: int(1, 1_000_000).default(60),
    ATTENUATION_RATE_WINDOW_MS: int(1000, 86_400_000).default(60_000),
    EVENT_VISIBILITY_TIMEOUT_MS: int(1000, 3_600_000).default(30_000),
    EVENT_RETENTION_MS: int(60_000, 90 * 86_400_000).default(7 * 86_400_000),
    // The call trail keeps whole UTC days: older ones are dropped (after their export, when
    // CALL_RECORD_ARCHIVE_DIR is set; a day whose export failed is kept).
    CALL_RECORD_RETENTION_DAYS: int(1, 36_500).default(90),
    CALL_RECORD_ARCHIVE_DIR: z.string().min(1).optional(),
    // The trail's Merkle tree (contract §22): its signed checkpoints' origin line and note key name,
    // the Ed25519 key that signs them (PKCS#8 PEM; required in production, the installation's own
    // elsewhere), the key it replaces (co-signs during a rotation), and how often a grown tree is signed.
    TRAIL_LOG_ORIGIN: z.string().regex(ORIGIN_PATTERN, 'a log origin: no whitespace, no plus sign').default('grant-broker.local/trail'),
    TRAIL_SIGNING_KEY: ed25519Pem.optional(),
    TRAIL_PREVIOUS_SIGNING_KEY: ed25519Pem.optional(),
    TRAIL_CHECKPOINT_MS: int(50, 3_600_000).default(1000),
    // Off: no leaves, no receipts (the benchmark's baseline for what the tree costs a check).
    TRAIL_TREE: z.enum(['on', 'off']).default('on'),
    // Off: a broker check must forward the caller's subjectToken; a broker-asserted principal is
    // refused (403). Only for brokers that authenticate their callers themselves and are trusted to.
    BROKER_TRUST_ASSERTED_PRINCIPAL: bool.default(false),
    // How long a human has to decide a call waiting for approval.
    APPROVAL_TTL_MS: int(10_000, 7 * 86_400_000).default(900_000),
    // Seals a pending approval's arguments and webhook secrets (AES-256-GCM); required in production,
    // the installation's own (as JWT_SECRET) elsewhere.
    APPROVAL_ARGS_KEY: sealingKey.optional(),
    // Where a development installation keeps what it makes for itself: its secrets, the demo world.
    DEVELOPMENT_STATE_DIR: z.string().min(1).default('.grant-broker'),
    // Keys that only open what they sealed before a rotation, comma-separated.
    APPROVAL_ARGS_PREVIOUS_KEYS: z
      .string()
      .refine(
        (value) => value.split(',').every((key) => decodeKey(key) !== undefined),
        'a comma-separated list of base64 keys of exactly 32 bytes',
      )
      .optional(),
    // The service's public base URL (the console's links in webhook payloads); the listening address otherwise.
    PUBLIC_URL: urlOf('https:', 'http:').optional(),
    // The OAuth authorization server for MCP hosts (src/oauth/): token lifetimes, whether a client
    // metadata document may be fetched from a private address, and how often its signing key rotates.
    OAUTH_ACCESS_TOKEN_TTL_MS: int(10_000, 86_400_000).default(600_000),
    OAUTH_REFRESH_TOKEN_TTL_MS: int(60_000, 365 * 86_400_000).default(30 * 86_400_000),
    OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: bool.default(false),
    OAUTH_SIGNING_KEY_ROTATION_MS: int(3_600_000, 365 * 86_400_000).default(30 * 86_400_000),
    // Webhook targets on loopback, link-local or private addresses are refused unless this says otherwise.
    WEBHOOK_ALLOW_PRIVATE: bool.default(false),
    // How many webhooks one pod may have: each is one more receiver of every approval message.
    WEBHOOK_MAX_PER_POD: int(1, 1000).default(10),
    // Whether this replica delivers the webhook outbox (every replica does by default; they split the work).
    WEBHOOK_DELIVERY: bool.default(true),
    // The zone in which org rules read the time of a call (broker check input `local_time`).
    POLICY_TIME_ZONE: z
      .string()
      .default('UTC')
      .refine((zone) => {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: zone });
          return true;
        } catch {
          return false;
        }
      }, 'an IANA time zone such as Europe/Berlin'),
    // Backstop for cross-replica invalidation: cached broker facts are reloaded at least this often.
    BROKER_FACT_MAX_AGE_MS: int(0, 3_600_000).default(60_000),
    // How long a session label lives on its grant tree after an allowed call first carried it.
    SESSION_LABEL_TTL_MS: int(1000, 30 * 86_400_000).default(86_400_000),
    // A change that forbids calls answers 2xx only once every replica is told (see src/cache/invalidation.ts).
    INVALIDATION_CONFIRM_TIMEOUT_MS: int(100, 30_000).default(1000),
    INVALIDATION_RELAY_INTERVAL_MS: int(50, 60_000).default(250),
    SHUTDOWN_TIMEOUT_MS: int(0, 120_000).default(10_000),
    // /metrics: a bearer token that reads it, and/or a port of its own (then not on PORT at all).
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    METRICS_PORT: int(1, 65535).optional(),
    METRICS_HOST: z.string().default('127.0.0.1'),
    WORKERS: int(1, 64).default(1),
    // The speed-ups of src/speedups/ (the broker check ahead of Koa, batched Redis and log writes,
    // kept input JSON). Off: the plain code alone, which answers the same, only slower.
    // The bench's table of where a check's time goes, written to stderr at exit (src/operations/stage-timings.ts).
    TRACE_STAGES: bool.default(false),
    // OpenTelemetry: spans of each broker check and its stages go to an OTLP collector when one of
    // these is set (the exporter reads OpenTelemetry's other OTEL_* variables itself).
    OTEL_TRACES_EXPORTER: z.string().optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
    SPEEDUPS: z.enum(['on', 'off']).default('on'),
    // GitHub Apps that connections mint per-call installation tokens through (JSON, by name; the
    // private keys are read from the variable or file each names, never from this text).
    GITHUB_APPS: gitHubAppsSetting,
    // One token request to GitHub: how long it may take and how large its answer may be.
    GITHUB_TOKEN_TIMEOUT_MS: int(100, 60_000).default(5_000),
    GITHUB_RESPONSE_MAX_BYTES: int(1024, 16 * 1024 * 1024).default(256 * 1024),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && !env.JWT_JWKS_URI && !env.JWT_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_SECRET'],
        message: 'production verifies human JWTs with a secret or keys of its own: set JWT_SECRET or JWT_JWKS_URI',
      });
    }
    if (env.NODE_ENV === 'production' && !env.TRAIL_SIGNING_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['TRAIL_SIGNING_KEY'],
        message: 'production signs the trail with a key of its own: set TRAIL_SIGNING_KEY (openssl genpkey -algorithm ed25519)',
      });
    }
    if (env.NODE_ENV === 'production' && !env.APPROVAL_ARGS_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['APPROVAL_ARGS_KEY'],
        message: 'production seals approval arguments with a key of its own: set APPROVAL_ARGS_KEY (openssl rand -base64 32)',
      });
    }
    // The token request carries the app's JWT: in production it goes over TLS only.
    for (const [name, app] of Object.entries(env.GITHUB_APPS)) {
      if (env.NODE_ENV === 'production' && !app.apiUrl.startsWith('https://')) {
        ctx.addIssue({ code: 'custom', path: ['GITHUB_APPS', name, 'apiUrl'], message: 'production reaches GitHub over https only' });
      }
    }
    if (env.POLICY_BUNDLE_PATH && env.POLICY_BUNDLE_URL) {
      ctx.addIssue({ code: 'custom', path: ['POLICY_BUNDLE_URL'], message: 'set POLICY_BUNDLE_PATH or POLICY_BUNDLE_URL, not both' });
    }
    if (Boolean(env.OIDC_ISSUER) !== Boolean(env.OIDC_CLIENT_ID)) {
      ctx.addIssue({ code: 'custom', path: ['OIDC_CLIENT_ID'], message: 'set OIDC_ISSUER and OIDC_CLIENT_ID together' });
    }
    if (env.NODE_ENV === 'production' && env.OIDC_ISSUER?.startsWith('http:')) {
      ctx.addIssue({ code: 'custom', path: ['OIDC_ISSUER'], message: 'production signs people in over https only' });
    }
    if (env.OIDC_ISSUER && !env.JWT_JWKS_URI) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_JWKS_URI'],
        message: "the console's ID tokens are verified with the issuer's keys: set JWT_JWKS_URI",
      });
    }
    // Issue 35: a provider's keys sign tokens for every application it serves; production accepts
    // only those of one issuer meant for this service (src/credentials/human-jwt.ts trustedTokens).
    if (env.NODE_ENV === 'production' && env.JWT_JWKS_URI && !env.JWT_ISSUER && !env.OIDC_ISSUER) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_ISSUER'],
        message: "production accepts the tokens of one issuer only: set JWT_ISSUER (the provider's iss) or OIDC_ISSUER",
      });
    }
    if (env.NODE_ENV === 'production' && env.JWT_JWKS_URI && !env.JWT_AUDIENCE && !env.OIDC_CLIENT_ID) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_AUDIENCE'],
        message:
          'production accepts only tokens meant for this service: set JWT_AUDIENCE (the aud of access tokens for this API) ' +
          "or OIDC_CLIENT_ID (the console's client, whose ID tokens are then accepted)",
      });
    }
    if (env.JWT_ISSUER && env.OIDC_ISSUER && env.JWT_ISSUER !== env.OIDC_ISSUER) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_ISSUER'],
        message: `differs from OIDC_ISSUER: the console's ID tokens would be refused (leave JWT_ISSUER unset, or set it to ${env.OIDC_ISSUER})`,
      });
    }
    const bundled = Boolean(env.POLICY_BUNDLE_PATH || env.POLICY_BUNDLE_URL);
    // Issue 11: signatures are mandatory in production, so the unsigned bare module is refused there.
    if (env.NODE_ENV === 'production' && !bundled) {
      ctx.addIssue({
        code: 'custom',
        path: ['POLICY_BUNDLE_PATH'],
        message:
          'production loads only a signed OPA bundle: set POLICY_BUNDLE_PATH or POLICY_BUNDLE_URL, verified with ' +
          'POLICY_BUNDLE_PUBLIC_KEY or POLICY_BUNDLE_SECRET (the unsigned module of POLICY_WASM_PATH is for development)',
      });
    }
    if (env.NODE_ENV === 'production' && bundled && !env.POLICY_BUNDLE_PUBLIC_KEY && !env.POLICY_BUNDLE_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['POLICY_BUNDLE_PUBLIC_KEY'],
        message: 'production verifies bundle signatures: set POLICY_BUNDLE_PUBLIC_KEY or POLICY_BUNDLE_SECRET',
      });
    }
  });

export type Config = Omit<z.infer<typeof environmentSchema>, 'JWT_SECRET' | 'APPROVAL_ARGS_KEY' | 'TRAIL_SIGNING_KEY'> & {
  /** As set (required in production); elsewhere when unset, the installation's own. */
  TRAIL_SIGNING_KEY: string;
  /**
   * As set; outside production when unset, the installation's own. Production with a JWKS and no
   * JWT_SECRET: a random one of this process that nobody holds (HS256 is not accepted there).
   */
  JWT_SECRET: string;
  /** As set (required in production); elsewhere when unset, the installation's own. */
  APPROVAL_ARGS_KEY: string;
  /** GITHUB_APPS with each app's private key read and checked. */
  githubApps: GitHubApps;
};

export class ConfigError extends Error {}

/** Reads and validates the environment once; every bad value is named in the message. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = environmentSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const { apps, problems } = resolveGitHubApps(parsed.data.GITHUB_APPS, env);
  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`);
  }
  const { JWT_SECRET, APPROVAL_ARGS_KEY, NODE_ENV, DEVELOPMENT_STATE_DIR } = parsed.data;
  const own = NODE_ENV !== 'production' && (!JWT_SECRET || !APPROVAL_ARGS_KEY) ? installationSecrets(DEVELOPMENT_STATE_DIR) : undefined;
  return {
    ...parsed.data,
    JWT_SECRET: JWT_SECRET ?? own?.jwtSecret ?? randomBytes(32).toString('base64url'),
    // Production without the key was refused above.
    APPROVAL_ARGS_KEY: APPROVAL_ARGS_KEY ?? own!.approvalArgsKey,
    // Production without the key was refused above.
    TRAIL_SIGNING_KEY: parsed.data.TRAIL_SIGNING_KEY ?? developmentTrailKey(DEVELOPMENT_STATE_DIR),
    githubApps: apps,
  };
}

/** The file of DEVELOPMENT_STATE_DIR that holds the installation's secrets. */
export function developmentSecretsFile(stateDir: string): string {
  return path.resolve(stateDir, 'secrets.json');
}

function installationSecrets(stateDir: string): DevelopmentSecrets {
  try {
    return developmentSecrets(developmentSecretsFile(stateDir));
  } catch (error) {
    throw new ConfigError(`invalid configuration:\n  DEVELOPMENT_STATE_DIR: ${(error as Error).message} (delete it to make new secrets)`);
  }
}

/**
 * The service's base URL as people reach it: PUBLIC_URL, else where it listens (loopback for a
 * wildcard address). The console's links and the demo's lines start with it.
 */
export function publicBaseUrl(config: Pick<Config, 'PUBLIC_URL' | 'HOST' | 'PORT'>): string {
  if (config.PUBLIC_URL) return config.PUBLIC_URL.replace(/\/+$/, '');
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
}
