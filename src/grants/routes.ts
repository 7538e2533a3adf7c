import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { ApiError } from '../kernel/errors';
import { page } from '../kernel/schema';
import type { GrantsService } from './service';
import { AttenuateGrantBody, CreateGrantBody, GrantParams, GrantSchema, ListGrantsQuery, PodParams } from './schemas';

const tag = 'Grants';

const revokeSpec = {
  tag,
  params: GrantParams,
  description:
    'The grant and every descendant get the same `revokedAt` in one transaction. Revoking again is a 200 no-op. ' +
    'Members who can read the grant but do not own its connection get 403 `not_connection_owner`; anyone else 404.',
  success: { status: 200 as const, description: 'The revoked grant', schema: GrantSchema },
  errors: ['not_connection_owner', 'invalidation_pending'] as const,
};

export function grantRoutes(grants: GrantsService, auth: CredentialAuthenticators): Route[] {
  const human = auth.credentials('human');
  const reader = auth.credentials('human', 'agent');
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/pods/:podId/grants',
        operationId: 'listPodGrants',
        tag,
        summary: 'List the grants of a pod (targeting it or one of its seats) that the caller can read',
        description: 'Pod members only (humans and installed agents); a non-member gets 404. Newest first; `status` filters.',
        auth: reader,
        params: PodParams,
        query: ListGrantsQuery,
        success: { status: 200, description: 'Readable grants, newest first', schema: page(GrantSchema) },
      },
      async ({ principal, params, query }) => ({ body: await grants.listOfPod(principal, params.podId, query) }),
    ),
    defineRoute(
      {
        method: 'post',
        path: '/api/grants',
        operationId: 'createGrant',
        tag,
        summary: 'Create a root grant on a connection the caller owns',
        auth: human,
        body: CreateGrantBody,
        success: { status: 201, description: 'The new grant', schema: GrantSchema },
        errors: [
          'server_derived_field',
          'resource_pattern_invalid',
          'not_found',
          'connection_kind_not_allowed',
          'connection_disconnected',
          'target_not_allowed',
          'audience_not_member',
          'tool_not_enabled',
          'grant_widening',
          'expiry_out_of_range',
          'org_policy_denied',
          'approval_required',
        ],
      },
      async ({ principal, body }) => ({ body: await grants.create(principal, body) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/grants/:grantId',
        operationId: 'getGrant',
        tag,
        summary: 'Read a grant: the connection owner, pod members for a pod grant, the seat for a seat grant',
        description:
          '`status` and `audience` are computed at read time. Outside the read scope a grant is a 404. ' +
          "An MCP host's OAuth access token reads, as its agent, the one grant it was issued for " +
          '(every other grant is a 404); it is accepted by no other route.',
        auth: auth.grantHolders(),
        params: GrantParams,
        success: { status: 200, description: 'The grant', schema: GrantSchema },
      },
      async ({ principal, params }) => {
        if (principal.kind === 'agent' && principal.onlyGrantId !== undefined && principal.onlyGrantId !== params.grantId) {
          throw new ApiError('not_found', 'no such grant');
        }
        return { body: await grants.read(principal, params.grantId) };
      },
    ),
    defineRoute(
      {
        method: 'post',
        path: '/api/grants/:grantId/attenuate',
        operationId: 'attenuateGrant',
        tag,
        summary: 'Narrow a usable grant into a child (installed agent, runtime token)',
        description:
          'The calling seat must be in the parent effective audience; the parent active and its connection connected. ' +
          'A widening is a 422 `grant_widening` whose detail names every widening field.',
        auth: auth.credentials('agent'),
        params: GrantParams,
        body: AttenuateGrantBody,
        success: { status: 201, description: 'The child grant', schema: GrantSchema },
        errors: [
          'server_derived_field',
          'resource_pattern_invalid',
          'not_installed_agent',
          'principal_not_in_audience',
          'runtime_stopped',
          'grant_not_usable',
          'grant_widening',
          'audience_not_member',
          'delegation_too_deep',
          'too_many_children',
          'rate_limited',
          'expiry_out_of_range',
          'org_policy_denied',
          'approval_required',
        ],
      },
      async ({ principal, params, body }) => ({ body: await grants.attenuate(principal, params.grantId, body) }),
    ),
    defineRoute(
      {
        ...revokeSpec,
        auth: human,
        method: 'post',
        path: '/api/grants/:grantId/revoke',
        operationId: 'revokeGrant',
        summary: 'Revoke a grant and its descendants',
      },
      async ({ principal, params }) => ({ body: await grants.revoke(principal, params.grantId) }),
    ),
    defineRoute(
      {
        ...revokeSpec,
        auth: human,
        method: 'delete',
        path: '/api/grants/:grantId',
        operationId: 'deleteGrant',
        summary: 'Same as revoke: the grant and its descendants',
      },
      async ({ principal, params }) => ({ body: await grants.revoke(principal, params.grantId) }),
    ),
  ];
}
