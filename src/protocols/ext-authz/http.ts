import type { PassThroughRoute } from '../../kernel/pass-through';
import type { ExtAuthzService } from './service';

export const EXT_AUTHZ_PREFIX = '/ext-authz';
/** The broker's own credential, added by Envoy (`authorization_request.headers_to_add`). */
const BROKER_HEADER = 'x-broker-authorization';
/** Envoy's HTTP mode: the authorization server names the request headers the upstream must not see. */
const HEADERS_TO_REMOVE = 'x-envoy-auth-headers-to-remove';
/** As the broker check: a forwarded body larger than the contract's 64 KiB is refused (413). */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * Envoy external authorization in HTTP service mode: Envoy sends the original method, path
 * (after `path_prefix: /ext-authz`), allowed headers and, with `with_request_body`, the body.
 * 200 lets the request through with the headers to set and remove; any other status is Envoy's
 * answer to the client.
 */
export function extAuthzHttpRoute(service: ExtAuthzService): PassThroughRoute {
  return {
    prefix: EXT_AUTHZ_PREFIX,
    maxBodyBytes: MAX_BODY_BYTES,
    operationId: 'extAuthzHttp',
    tag: 'Envoy external authorization',
    summary: "Envoy's HTTP external authorization: one broker check for the request Envoy forwards",
    description:
      "Any method; the path after `/ext-authz` is the original request's path. The broker authenticates with " +
      "`x-broker-authorization: Bearer bkt_…`; the agent's credential is the forwarded `authorization`; the grant is " +
      "the `grant-id` header, or, when the agent's credential is an MCP host's OAuth access token, that token's grant " +
      '(a `grant-id` naming another grant is 400 `grant_mismatch`; an approval may be named with ' +
      '`x-grant-approval-id`). The tool and its arguments come from ' +
      "the broker's route map (`PUT /api/brokers/{brokerId}/routes`): a method and path template, or, on an `mcp: true` " +
      "route, the JSON-RPC body's `tools/call` (`initialize`, `ping`, `tools/list` and notifications pass without a " +
      'check; other MCP methods are denied `method_not_allowed` unless a route names them). 200 allows: `x-grant-call-id` ' +
      'names the recorded call, `authorization` carries the minted credential when the route asks for one, and ' +
      "`x-envoy-auth-headers-to-remove` takes the agent's credential and the grant header off the upstream request. " +
      'Every other status denies, with a problem document carrying `reason`, `explanation` and `callId`: 403 for a ' +
      "denial (another broker's grant reads as `not_found`; a request no route maps is `no_route`), 403 " +
      '`approval_required` with `approvalId`, 429 `budget_exhausted` with `retry-after` in seconds, 401 for a missing or ' +
      'bad broker or agent credential, 413 for a body over 64 KiB, 503 when a dependency is down (never an allow). ' +
      'Every checked call is recorded in the call trail as a `POST /api/broker/check` would be; report its outcome with ' +
      '`POST /api/broker/calls/{callId}/outcome`.',
    responses: {
      200: 'Allowed: the request goes upstream with the headers of this answer',
      400: 'Denied: the forwarded request is malformed (a path that is not canonical, a body that is not JSON)',
      401: 'Denied: no or a bad broker credential, or agent credential',
      403: 'Denied: a problem document with `reason`, `explanation`, `callId`, and `approvalId` when a human must approve',
      413: 'Denied: the forwarded body is larger than 64 KiB',
      429: 'Denied: the budget is spent; `retry-after` says when the first call frees',
      503: 'Denied: a dependency is unavailable; nothing was allowed',
    },
    async handle(request) {
      const verdict = await service.authorize(
        { method: request.method, path: request.path, headers: request.headers, body: request.body },
        request.headers[BROKER_HEADER],
      );
      if (verdict.allow) {
        return { status: 200, headers: { ...verdict.setHeaders, [HEADERS_TO_REMOVE]: verdict.removeHeaders.join(',') } };
      }
      return { status: verdict.status, headers: verdict.headers, body: verdict.body };
    },
  };
}
