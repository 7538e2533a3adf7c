import type { Route } from '../http/route';

export const grantRoutes: Route[] = [];
