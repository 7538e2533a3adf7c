import { createApprovalsService } from './approvals/service';
import type { BrokerDeps } from './broker/deps';
import { createBrokerService } from './broker/service';
import { createConnectionsService } from './connections/service';
import { credentialAuthenticators } from './credentials/authenticators';
import { createGrantsService } from './grants/service';
import { readApiDecisions } from './http/decisions';
import { buildOpenApiDocument } from './http/openapi';
import type { Route } from './kernel/route';
import { createPodsService } from './pods/service';
import { createRegistryService } from './registry/service';
import { allRoutes, passThroughRoutes } from './routes';
import { DEFAULT_MAX_BUNDLE_BYTES } from './policy/bundles/limits';
import { createRuntimeService } from './runtime/service';
import { createTrailService } from './trail/service';
import { createTrailVerification } from './trail/verification';
import { createWebhooksService } from './webhooks/service';

/**
 * Every route as declared (path, method, authenticator, schemas, errors), without a database or
 * Redis: route factories only close over their services, so inert ones are enough to read the
 * declarations. For the OpenAPI document clients are generated from, and for tests that walk them.
 */
export function declaredRoutes(): Route[] {
  const inert = {} as never;
  const declared = allRoutes(
    {
      grants: createGrantsService(inert),
      trail: createTrailService(inert),
      trailVerification: createTrailVerification(inert),
      broker: createBrokerService(inert as BrokerDeps),
      approvals: createApprovalsService(inert),
      runtime: createRuntimeService(inert),
      registry: createRegistryService(inert),
      pods: createPodsService(inert),
      connections: createConnectionsService(inert),
      webhooks: createWebhooksService(inert),
      operations: { db: inert, redis: inert, policy: inert, metricsToken: undefined },
      overview: inert,
      playground: { maxBundleBytes: DEFAULT_MAX_BUNDLE_BYTES } as never,
      publicUrl: 'https://broker.example',
      extAuthz: inert,
    },
    credentialAuthenticators(
      async () => null,
      async () => undefined,
    ),
  );
  return [...declared.api, declared.metrics];
}

/**
 * The document GET /api/openapi.json serves, built offline (scripts/openapi.mjs writes it out),
 * introduced by the decisions of docs/api-decisions.md.
 */
export function openApiDocument(decisions: string = readApiDecisions()) {
  return buildOpenApiDocument(declaredRoutes(), decisions, passThroughRoutes({ extAuthz: {} as never }));
}
