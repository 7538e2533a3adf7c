import { createApprovalsService } from '../../src/approvals/service';
import type { BrokerDeps } from '../../src/broker/deps';
import { createBrokerService } from '../../src/broker/service';
import { createConnectionsService } from '../../src/connections/service';
import { credentialAuthenticators } from '../../src/credentials/authenticators';
import { createGrantsService } from '../../src/grants/service';
import type { Route } from '../../src/kernel/route';
import { createPodsService } from '../../src/pods/service';
import { createRegistryService } from '../../src/registry/service';
import { allRoutes as routesOf } from '../../src/routes';
import { createRuntimeService } from '../../src/runtime/service';

/**
 * Every route of the service, as declared (path, method, authenticator, schemas, errors), for the
 * tests that walk them all at collection time. Route factories only close over their services,
 * so inert services are enough to read the declarations; nothing here is ever called.
 */
const inert = {} as never;
const declared = routesOf(
  {
    grants: createGrantsService(inert),
    broker: createBrokerService(inert as BrokerDeps),
    approvals: createApprovalsService(inert),
    runtime: createRuntimeService(inert),
    registry: createRegistryService(inert),
    pods: createPodsService(inert),
    connections: createConnectionsService(inert),
    operations: { db: inert, redis: inert, policy: inert, metricsToken: undefined },
  },
  credentialAuthenticators(async () => null),
);

export const allRoutes: Route[] = [...declared.api, declared.metrics];
