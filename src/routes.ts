import { approvalRoutes } from './approvals/routes';
import type { ApprovalsService } from './approvals/service';
import type { BrokerService } from './broker/service';
import { brokerRoutes } from './broker/routes';
import type { ConnectionsService } from './connections/service';
import { connectionRoutes } from './connections/routes';
import { grantRoutes } from './grants/routes';
import type { GrantsService } from './grants/service';
import type { CredentialAuthenticators, Route } from './kernel/route';
import type { PassThroughRoute } from './kernel/pass-through';
import { extAuthzHttpRoute } from './protocols/ext-authz/http';
import { routeMapRoutes, type RouteMaps } from './protocols/ext-authz/routes';
import type { ExtAuthzService } from './protocols/ext-authz/service';
import { healthRoutes, metricsRoute, type OperationsDeps } from './operations/routes';
import { policyStatusRoutes } from './operations/policy-status';
import { podRoutes } from './pods/routes';
import type { PodsService } from './pods/service';
import { registryRoutes } from './registry/routes';
import type { RegistryService } from './registry/service';
import { runtimeRoutes } from './runtime/routes';
import type { RuntimeService } from './runtime/service';
import { webhookRoutes } from './webhooks/routes';
import { overviewRoutes } from './overview/routes';
import type { OverviewDeps } from './overview/deps';
import { playgroundRoutes } from './playground/routes';
import type { PlaygroundDeps } from './playground/deps';
import type { WebhooksService } from './webhooks/service';
import { grantTrailRoutes, outcomeRoutes } from './trail/routes';
import { authzenRoutes } from './protocols/authzen/routes';
import { opaDataRoutes, type GatewayCheck } from './protocols/opa-data/routes';
import type { TrailService } from './trail/service';
import type { TrailVerification } from './trail/verification';
import { trailVerificationRoutes } from './trail/verification-routes';

export interface Services {
  grants: GrantsService;
  trail: TrailService;
  trailVerification: TrailVerification;
  broker: BrokerService;
  approvals: ApprovalsService;
  runtime: RuntimeService;
  registry: RegistryService;
  pods: PodsService;
  connections: ConnectionsService;
  webhooks: WebhooksService;
  operations: OperationsDeps;
  overview: OverviewDeps;
  playground: PlaygroundDeps;
  /** The service's public base URL (PUBLIC_URL): where AuthZEN's metadata says its endpoints are. */
  publicUrl: string;
  /** How a gateway's forwarded request becomes a check (the broker's route map); none: `no_route`. */
  gatewayCheck?: GatewayCheck;
  extAuthz: ExtAuthzService & RouteMaps;
}

/** Every route of the API port, in the order of the spec; the OpenAPI document lists the same. */
export function apiRoutes(services: Services, auth: CredentialAuthenticators): Route[] {
  return [
    ...grantRoutes(services.grants, auth),
    ...grantTrailRoutes(services.trail, auth),
    ...brokerRoutes(services.broker),
    ...routeMapRoutes(services.extAuthz, auth),
    ...outcomeRoutes(services.trail, auth),
    ...authzenRoutes(services.broker, { baseUrl: services.publicUrl }),
    ...opaDataRoutes(services.broker, services.gatewayCheck),
    ...trailVerificationRoutes(services.trailVerification, auth),
    ...approvalRoutes(services.approvals, auth),
    ...runtimeRoutes(services.runtime, auth),
    ...registryRoutes(services.registry, auth),
    ...podRoutes(services.pods, auth),
    ...overviewRoutes(services.overview, auth),
    ...connectionRoutes(services.connections, auth),
    ...webhookRoutes(services.webhooks, auth),
    ...healthRoutes(services.operations),
    ...policyStatusRoutes(services.operations.policy, auth),
    ...playgroundRoutes(services.playground, auth),
  ];
}

/** The routes that take a forwarded request whole (Envoy's HTTP external authorization). */
export function passThroughRoutes(services: Pick<Services, 'extAuthz'>): PassThroughRoute[] {
  return [extAuthzHttpRoute(services.extAuthz)];
}

/** The API's routes and /metrics (served on the API port, or on METRICS_PORT). */
export function allRoutes(
  services: Services,
  auth: CredentialAuthenticators,
): { api: Route[]; metrics: Route; passThrough: PassThroughRoute[] } {
  return { api: apiRoutes(services, auth), metrics: metricsRoute(services.operations), passThrough: passThroughRoutes(services) };
}
