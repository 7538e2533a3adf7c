import { brokerRoutes } from '../broker/routes';
import { connectionRoutes } from '../connections/routes';
import { grantRoutes } from '../grants/routes';
import { podRoutes } from '../pods/routes';
import { registryRoutes } from '../registry/routes';
import { runtimeRoutes } from '../runtime/routes';
import { healthRoutes, metricsRoute } from './health';
import type { Route } from './route';

/** Every route of the service, in the order of the spec; the OpenAPI document lists the same. */
export const allRoutes: Route[] = [
  ...grantRoutes,
  ...brokerRoutes,
  ...runtimeRoutes,
  ...registryRoutes,
  ...podRoutes,
  ...connectionRoutes,
  ...healthRoutes,
  metricsRoute,
];
