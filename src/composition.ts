import { localTimeIn } from './kernel/local-time';
import { createBrokerService } from './broker/service';
import { CheckBody } from './broker/schemas';
import { parseInput } from './http/request';
import { replaceRoutes, routesOf } from './protocols/ext-authz/repository';
import type { RouteMap } from './protocols/ext-authz/route-map';
import { createExtAuthzService } from './protocols/ext-authz/service';
import { freshFor } from './speedups/fresh-for';
import { checkParts } from './check-composition';
import { treeSessionKeys } from './budget/keys';
import { connectRedis } from './redis/client';
import { RateLimit } from './budget/rate-limit';
import type { TreeWindowsSource } from './budget/rebuild';
import { CacheInvalidation } from './cache/invalidation';
import { publicBaseUrl, type Config } from './config';
import { createConnectionsService } from './connections/service';
import { bindingOf } from './github-apps/bindings';
import { InstallationTokens } from './github-apps/installation-tokens';
import { credentialResolver } from './credentials/authenticators';
import { createHumanJwtVerifier } from './credentials/human-jwt';
import { createDatabase, ensureDatabaseExists, migrateToLatest } from './db/database';
import { EventWaker } from './events/waker';
import { budgetLevelsOfTree, treeRootsAffectedBy } from './grants/repository';
import { insertCallRecord } from './trail/repositories/call-record-inserts';
import type { NewCallRecord } from './trail/repositories/call-records';
import { callsInWindows } from './trail/repositories/call-windows';
import { treeSessionCalls } from './trail/repositories/tallies';
import { createGrantsService } from './grants/service';
import { createTrailService } from './trail/service';
import { systemClock, type Clock } from './kernel/clock';
import { createLogger, type Logger } from './kernel/log';
import { createPodsService } from './pods/service';
import { approvalGrantReads, grantLookups, podPorts } from './domain-ports';
import { expireApprovalsOfGrants } from './approvals/repository';
import { createApprovalsService } from './approvals/service';
import { approvalMessageFeeds } from './approvals/messages';
import { createCallApprovals } from './approvals/requests';
import { ApprovalArgsVault } from './approvals/args-vault';
import { TallyWriter } from './trail/tally-writer';
import { Checkpointer } from './trail/tree/checkpointer';
import { trailSigner } from './trail/tree/note';
import { createTrailVerification } from './trail/verification';
import { overviewPorts, playgroundPorts } from './console-ports';
import { decodeKey, KeyRing } from './credentials/sealed-box';
import { createWebhooksService } from './webhooks/service';
import { findLiveRuntimeToken, markRuntimeTokenUsed } from './registry/repository';
import { createRegistryService } from './registry/service';
import type { Services } from './routes';
import { createRuntimeService } from './runtime/service';
import { createSpeedUps } from './speedups';
import { NO_TRACING } from './kernel/trace';
import { createStageTimings } from './operations/stage-timings';
import { accessTokens } from './oauth/access-tokens';
import { publishedKeys } from './oauth/signing-keys';
import { createTracing } from './operations/tracing';
import { composeFront } from './front-composition';
import { composePolicy } from './policy-composition';
import { startJobs } from './jobs-composition';
import { warnOnEvictingRedis } from './redis/durability';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';

export interface ServiceOptions {
  logger?: Logger;
  /** Create the database and run migrations first (the start command and tests do). */
  migrate?: boolean;
  /** The system clock unless a test moves time itself. */
  clock?: Clock;
  /** Certificates trusted for client metadata documents beside Node's store (tests; NODE_EXTRA_CA_CERTS in a deployment). */
  clientMetadataCa?: string;
  /** Where the check's spans go besides OTLP (a test's in-memory exporter). */
  spanExporter?: SpanExporter;
}

/**
 * The composition root: builds every dependency once, gives each domain service exactly what it
 * uses, and mounts their routes on the Koa app. No behaviour of its own.
 */
export async function buildService(config: Config, options: ServiceOptions = {}) {
  const log = options.logger ?? createLogger(config.LOG_LEVEL);
  const clock = options.clock ?? systemClock;
  // The performance machinery, made once here and handed to what it speeds up (src/speedups/).
  const speedUps = createSpeedUps({ enabled: config.SPEEDUPS === 'on' });
  // OpenTelemetry spans of the check's stages: exported when configured, and the bench's stage table.
  const tracing = createTracing({
    env: config,
    processors: config.TRACE_STAGES ? [createStageTimings()] : [],
    exporter: options.spanExporter,
  });
  if (options.migrate) await ensureDatabaseExists(config.DATABASE_URL);
  const db = createDatabase(config.DATABASE_URL, config.DATABASE_POOL_MAX, log.child({ component: 'db' }));
  if (options.migrate) await migrateToLatest(db);
  const redis = connectRedis(
    {
      url: config.REDIS_URL,
      clusterNodes: config.REDIS_CLUSTER_NODES?.split(',').map((node) => node.trim()),
      keyPrefix: config.REDIS_KEY_PREFIX,
      commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
    },
    log,
    speedUps.redisBeforeSend,
  );
  await redis.connect().catch((err) => log.error({ err }, 'redis unavailable at start; will keep retrying'));
  void warnOnEvictingRedis(redis, log);
  const { policy, decisionLog } = await composePolicy({ config, log, clock, speedUps });
  await policy.reload();
  if (config.POLICY_WATCH) policy.watch();

  const invalidation = new CacheInvalidation(
    db,
    redis,
    log.child({ component: 'invalidation' }),
    { confirmTimeoutMs: config.INVALIDATION_CONFIRM_TIMEOUT_MS, relayIntervalMs: config.INVALIDATION_RELAY_INTERVAL_MS },
    { rootsOf: treeRootsAffectedBy },
  );
  invalidation.startRelay();
  const eventWaker = new EventWaker(config.DATABASE_URL, log.child({ component: 'events' }));
  const resolveCredential = credentialResolver({
    db,
    runtimeTokens: { findLive: (hash, now) => findLiveRuntimeToken(db, hash, now), markUsed: (id) => markRuntimeTokenUsed(db, id) },
    verifyHumanJwt: createHumanJwtVerifier(config),
    clock,
  });

  // The ports of the services, which know no domain, filled from the repositories: what a budget
  // rebuild reads of grants and call records (invalidation's and credentials' ports are above).
  const treeWindows: TreeWindowsSource = {
    levelsOf: (rootId) => budgetLevelsOfTree(db, rootId),
    callsIn: (levels, marginMs) => callsInWindows(db, levels, marginMs),
    sessionOf: (grantIds, sinceMs, labelsSinceMs) => treeSessionCalls(db, grantIds, sinceMs, labelsSinceMs),
  };
  const grants = createGrantsService({
    db,
    policy,
    invalidation,
    clock,
    attenuationLimit: new RateLimit(redis, 'attenuations', config.ATTENUATION_RATE_LIMIT, config.ATTENUATION_RATE_WINDOW_MS),
    limits: { maxDelegationDepth: config.MAX_DELEGATION_DEPTH, maxLiveChildrenPerGrant: config.MAX_LIVE_CHILDREN_PER_GRANT },
    expireApprovals: expireApprovalsOfGrants,
    forgetTreeSession: async (rootId) => void (await redis.del(...treeSessionKeys(rootId))),
    lookups: grantLookups,
  });
  // One key ring seals what the service must read back: approvals' arguments, webhook secrets.
  const keyRing = sealingKeys(config);
  const approvalArgs = new ApprovalArgsVault(keyRing, policy);
  // MCP hosts' access tokens, verified against the authorization server's keys as stored (src/oauth/).
  const hostTokens = accessTokens({ issuer: publicBaseUrl(config), clock, loadKeys: () => publishedKeys(db, keyRing) });
  const tokens = new InstallationTokens(config.githubApps, clock, {
    timeoutMs: config.GITHUB_TOKEN_TIMEOUT_MS,
    maxBytes: config.GITHUB_RESPONSE_MAX_BYTES,
  });
  const apps = { has: (name: string) => config.githubApps.has(name), bindingOf: (app: string, id: string) => bindingOf(db, app, id) };
  // The approvals' outbox, read by the webhooks and by the agents' event polls.
  const consoleUrl = consoleUrlOf(publicBaseUrl(config));
  const approvalMessages = approvalMessageFeeds(db);
  // The approvals a broker check uses or asks for, its record written in the approval's transaction.
  const callApprovals = createCallApprovals<NewCallRecord>({
    db,
    vault: approvalArgs,
    consoleUrl,
    recordIn: (unit, record) => insertCallRecord(unit, record, config.TRAIL_TREE === 'on'),
  });
  const pods = podPorts({ db, policy });
  const tallies = new TallyWriter({ db, log: log.child({ component: 'call-tallies' }) });
  const signer = trailSigner(config.TRAIL_LOG_ORIGIN, config.TRAIL_SIGNING_KEY, config.TRAIL_PREVIOUS_SIGNING_KEY);
  const checkpointer = new Checkpointer({
    db,
    signer,
    intervalMs: config.TRAIL_CHECKPOINT_MS,
    log: log.child({ component: 'trail-tree' }),
  });
  const pendingCalls = speedUps.pendingCalls();
  const broker = createBrokerService({
    ...checkParts({
      config,
      db,
      redis,
      clock,
      speedUps,
      pendingCalls,
      resolveCredential,
      verifyAccessToken: (token) => hostTokens.verify(token),
      approvals: callApprovals,
      treeWindows,
    }),
    approvals: callApprovals,
    policy,
    log,
    clock,
    resolveCredential,
    trustAssertedPrincipal: config.BROKER_TRUST_ASSERTED_PRINCIPAL,
    localTime: localTimeIn(config.POLICY_TIME_ZONE),
    tracer: tracing?.tracer ?? NO_TRACING,
    approvalTtlMs: config.APPROVAL_TTL_MS,
    tokens,
    tallies,
  });
  // Each broker's route map, kept a second per replica when the speed-ups are on (src/speedups/fresh-for.ts).
  const keptRoutes = speedUps.enabled
    ? freshFor((brokerId) => routesOf(db, brokerId), { freshMs: 1000, max: 1000, now: () => clock.now() })
    : { read: (brokerId: string) => routesOf(db, brokerId), forget: () => undefined };
  const routeMaps = {
    routesOf: keptRoutes.read,
    replaceRoutes: async (brokerId: string, routes: RouteMap) => {
      await replaceRoutes(db, brokerId, routes, new Date(clock.now()));
      keptRoutes.forget(brokerId);
    },
  };
  // Envoy's external authorization: the same broker check, its input judged by the check's own rules.
  const extAuthz = createExtAuthzService({
    check: broker.check,
    brokerCredentials: broker.credentials,
    validate: (body) => parseInput(CheckBody, body, 'body'),
    routesOf: routeMaps.routesOf,
    resolveCredential,
    accessTokens: hostTokens,
    log: log.child({ component: 'ext-authz' }),
  });
  const services: Services = {
    grants,
    trail: createTrailService({
      db,
      policy,
      clock,
      tree: config.TRAIL_TREE === 'on',
      pendingCalls,
      readableGrant: (principal, grantId) => grants.read(principal, grantId),
    }),
    trailVerification: createTrailVerification({
      db,
      signer,
      checkpointer,
      readableGrant: (principal, grantId) => grants.read(principal, grantId),
      blocks: speedUps.proofBlocks(),
    }),
    broker,
    extAuthz: { ...routeMaps, ...extAuthz },
    approvals: createApprovalsService({
      db,
      policy,
      clock,
      argsVault: approvalArgs,
      consoleUrl,
      waker: eventWaker,
      grants: approvalGrantReads(db),
    }),
    runtime: createRuntimeService({
      db,
      policy,
      clock,
      eventWaker,
      agentMessages: approvalMessages.agents,
      visibilityMs: config.EVENT_VISIBILITY_TIMEOUT_MS,
      grants,
    }),
    registry: createRegistryService({ db, policy, invalidation, clock, pods }),
    pods: createPodsService({ db, policy, invalidation, clock }),
    connections: createConnectionsService({ db, policy, invalidation, clock, apps }),
    webhooks: createWebhooksService({
      db,
      policy,
      clock,
      keys: keyRing,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
      maxPerPod: config.WEBHOOK_MAX_PER_POD,
      pods,
    }),
    operations: { db, redis, policy, metricsToken: config.METRICS_TOKEN },
    overview: overviewPorts(db, policy, clock),
    playground: playgroundPorts(db, policy, { securityAdmins: config.SECURITY_ADMINS, maxBundleBytes: config.POLICY_BUNDLE_MAX_BYTES }),
    publicUrl: publicBaseUrl(config),
    // Kong's and APISIX's OPA inputs are plain HTTP requests: the broker's route map names their call.
    gatewayCheck: extAuthz.checkOf,
  };
  const jobs = startJobs({ config, db, clock, log, keyRing, eventWaker, approvalMessages, checkpointer });

  const { app, metricsApp, consoleLinks, authorizationServer } = await composeFront({
    config,
    log,
    clock,
    db,
    redis,
    policy,
    keyRing,
    services,
    grants,
    resolveCredential,
    hostTokens,
    speedUps,
    tracing,
    clientMetadataCa: options.clientMetadataCa,
  });

  async function close(): Promise<void> {
    policy.close();
    await jobs.stop();
    invalidation.close();
    await services.broker.settle();
    await tallies.close();
    // Decisions made until now are written, and uploaded if the collector answers in time.
    await decisionLog.close();
    await eventWaker.close();
    redis.disconnect();
    await db.destroy();
    await tracing?.shutdown();
  }

  /** The infrastructure itself, for operators' commands and tests. */
  const infrastructure = {
    config,
    db,
    redis,
    policy,
    log,
    invalidation,
    eventWaker,
    speedUps,
    approvalArgsSweep: jobs.approvalArgsSweep,
    keyRing,
    webhookDispatcher: jobs.webhookDispatcher,
    consoleLinks,
    trailMaintenance: jobs.trailMaintenance,
    tallies,
    approvalMessages,
    authorizationServer,
  };
  return { app, metricsApp, services, infrastructure, close };
}

/** APPROVAL_ARGS_KEY seals; it and APPROVAL_ARGS_PREVIOUS_KEYS open (config.ts checked their shape). */
function sealingKeys(config: Config): KeyRing {
  const previous = (config.APPROVAL_ARGS_PREVIOUS_KEYS ?? '').split(',').filter((key) => key.trim() !== '');
  return new KeyRing(
    decodeKey(config.APPROVAL_ARGS_KEY)!,
    previous.map((key) => decodeKey(key)!),
  );
}

/** An approval's page in the web console (`<PUBLIC_URL>/console/approvals/<id>`), which webhooks link to. */
function consoleUrlOf(publicUrl: string): (approvalId: string) => string {
  const base = publicUrl.replace(/\/+$/, '');
  return (approvalId) => `${base}/console/approvals/${encodeURIComponent(approvalId)}`;
}
