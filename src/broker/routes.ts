import type { Route } from '../http/route';

export const brokerRoutes: Route[] = [];
