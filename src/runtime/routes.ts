import type { Route } from '../http/route';

export const runtimeRoutes: Route[] = [];
