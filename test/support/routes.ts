import { declaredRoutes } from '../../src/openapi-document';
import type { Route } from '../../src/kernel/route';

/** Every route of the service, as declared, for the tests that walk them all at collection time. */
export const allRoutes: Route[] = declaredRoutes();
