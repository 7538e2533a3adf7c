import { ApiError } from '../../kernel/errors';
import type { BrokerPrincipal } from '../../kernel/principals';
import { defineRoute, type CredentialAuthenticators, type Route } from '../../kernel/route';
import { idParam, z } from '../../kernel/schema';
import { RouteMapBody, type RouteMap } from './route-map';

const tag = 'Envoy external authorization';
const BrokerParams = z.strictObject({ brokerId: idParam('brk_01jd6x3c4vf8r9t2y5u7w0z1ab') });

/** What the route-map routes use: a broker's map, read and replaced whole. */
export interface RouteMaps {
  routesOf(brokerId: string): Promise<RouteMap>;
  replaceRoutes(brokerId: string, routes: RouteMap): Promise<void>;
}

/** Only the broker itself reads or replaces its map; any other broker's is not there (404). */
function ownBroker(principal: BrokerPrincipal, brokerId: string): void {
  if (principal.brokerId !== brokerId) throw new ApiError('not_found', 'no such broker');
}

export function routeMapRoutes(maps: RouteMaps, auth: CredentialAuthenticators): Route[] {
  return [
    defineRoute(
      {
        method: 'put',
        path: '/api/brokers/:brokerId/routes',
        operationId: 'putBrokerRoutes',
        tag,
        summary: "Replace the broker's route map for Envoy external authorization",
        description:
          'Maps a plain HTTP API (method and path template) or an MCP method other than tools/call to a tool, so Envoy ' +
          'can ask `/ext-authz/` or the gRPC Authorization service about it. Replaces the whole map. `{name}` matches ' +
          'one path segment, a last `{name*}` the rest; a request whose path holds `..`, an encoded slash or NUL matches ' +
          'nothing. `npm run admin -- broker routes --id brk_… --file routes.json` sends the same.',
        auth: auth.credentials('broker'),
        params: BrokerParams,
        body: RouteMapBody,
        success: { status: 200, description: 'The map now in force', schema: RouteMapBody },
      },
      async ({ params, body, principal }) => {
        ownBroker(principal, params.brokerId);
        await maps.replaceRoutes(params.brokerId, body.routes);
        return { body: { routes: body.routes } };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/brokers/:brokerId/routes',
        operationId: 'getBrokerRoutes',
        tag,
        summary: "The broker's route map",
        auth: auth.credentials('broker'),
        params: BrokerParams,
        success: { status: 200, description: 'The map in force (empty when none was put)', schema: RouteMapBody },
      },
      async ({ params, principal }) => {
        ownBroker(principal, params.brokerId);
        return { body: { routes: await maps.routesOf(params.brokerId) } };
      },
    ),
  ];
}
