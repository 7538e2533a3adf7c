import { z } from 'zod';

/** The development JWT secret: fine on a laptop, refused when NODE_ENV=production. */
export const DEVELOPMENT_JWT_SECRET = 'dev-only-jwt-secret-do-not-use-in-production';

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
    HOST: z.string().default('0.0.0.0'),
    PORT: int(0, 65535).default(8080),
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
    JWT_SECRET: z.string().min(32, 'must be at least 32 characters').default(DEVELOPMENT_JWT_SECRET),
    JWT_JWKS_URI: urlOf('https:', 'http:').optional(),
    JWT_ISSUER: z.string().optional(),
    JWT_AUDIENCE: z.string().optional(),
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
    // Off: a broker check must forward the caller's subjectToken; a broker-asserted principal is
    // refused (403). Only for brokers that authenticate their callers themselves and are trusted to.
    BROKER_TRUST_ASSERTED_PRINCIPAL: bool.default(false),
    // How long a human has to decide a call waiting for approval.
    APPROVAL_TTL_MS: int(10_000, 7 * 86_400_000).default(900_000),
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
    SPEEDUPS: z.enum(['on', 'off']).default('on'),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && !env.JWT_JWKS_URI && env.JWT_SECRET === DEVELOPMENT_JWT_SECRET) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_SECRET'],
        message: 'the development secret is refused in production: set JWT_SECRET or JWT_JWKS_URI',
      });
    }
    if (env.POLICY_BUNDLE_PATH && env.POLICY_BUNDLE_URL) {
      ctx.addIssue({ code: 'custom', path: ['POLICY_BUNDLE_URL'], message: 'set POLICY_BUNDLE_PATH or POLICY_BUNDLE_URL, not both' });
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

export type Config = z.infer<typeof environmentSchema>;

export class ConfigError extends Error {}

/** Reads and validates the environment once; every bad value is named in the message. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = environmentSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
