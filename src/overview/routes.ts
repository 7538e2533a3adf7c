import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { OverviewParams, OverviewQuery, PodOverviewSchema } from './schemas';
import { readOverview } from './service';
import type { OverviewDeps } from './deps';

export function overviewRoutes(deps: OverviewDeps, auth: CredentialAuthenticators): Route[] {
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/pods/:podId/overview',
        operationId: 'getPodOverview',
        tag: 'Pods',
        summary: "A pod's checks per hour (allowed, denied, awaiting approval), denials by reason and org rule, trees nearest their budget",
        description:
          "For the pod's members (`overview.read` of `pods/access`); anyone else gets 404. Counted from the call trail's hourly " +
          'tallies (kept as checks are recorded, one statement a second per replica), never from its records; a replica ' +
          "stopped without a shutdown loses its last second of counts. Each tree's budget use is exact.",
        auth: auth.credentials('human'),
        params: OverviewParams,
        query: OverviewQuery,
        success: { status: 200, description: "The pod's overview", schema: PodOverviewSchema },
        errors: ['not_found'],
      },
      async ({ principal, params, query }) => ({ body: await readOverview(deps, principal, params.podId, query.range) }),
    ),
  ];
}
