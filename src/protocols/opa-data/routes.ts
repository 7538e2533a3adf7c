import type { CheckingBroker } from '../../broker/authenticator';
import type { CheckAnswer, CheckRequest } from '../../broker/check';
import { CheckBody, CheckResult } from '../../broker/schemas';
import type { BrokerService } from '../../broker/service';
import { ApiError } from '../../kernel/errors';
import type { CallPrincipal } from '../../kernel/principals';
import { defineRoute, type Authenticator, type Route } from '../../kernel/route';
import { z } from '../../kernel/schema';
import { BROKER_HEADER, documentOf, inputOf, refusalOf, refusedDocument, type ForwardedCall, type InputOf } from './mapping';

const tag = 'OPA data API';

/**
 * How a gateway's request (Kong's, APISIX's) becomes a check: the broker's route map (contract
 * §21, shared with Envoy external authorization). Without one, no request is mapped: `no_route`.
 * `pass` (an MCP message that calls no tool) names the subject whose credential the port has
 * verified: nothing passes on an unverified token.
 */
export type GatewayCheck = (
  broker: CheckingBroker,
  call: ForwardedCall,
) => Promise<
  { kind: 'check'; request: CheckRequest } | { kind: 'pass'; subject: CallPrincipal } | { kind: 'refuse'; status: number; reason: string }
>;

const DataRequest = z
  .object({
    input: z.unknown().optional().openapi({
      description: 'The body of POST /api/broker/check, or the input the OPA plugins of Kong (`request.http`) and APISIX (`request`) send',
    }),
  })
  .openapi('OpaDataRequest');

const Headers = z.record(z.string(), z.string()).openapi({
  description:
    'On allow, for the upstream: `x-grant-call-id`, and `authorization` with the minted credential when asked for; on a refusal, for the client (`retry-after` with a spent budget)',
});

const CheckDocument = z
  .object({
    result: CheckResult.partial()
      .extend({
        allow: z.boolean(),
        reason: z.string(),
        headers: Headers,
        status_code: z
          .number()
          .int()
          .optional()
          .openapi({ description: 'On a refusal: 429 for a spent budget, else 403 (401 for a bad subject token)' }),
      })
      .openapi({ description: 'The check’s answer with `allow`, and what the gateways’ OPA plugins read' }),
    decision_id: z.string().optional().openapi({ description: 'The call’s id (absent when no call was checked)' }),
  })
  .openapi('OpaCheckDocument');

const AllowDocument = z.object({ result: z.boolean(), decision_id: z.string().optional() }).openapi('OpaAllowDocument');

const Undefined = z.object({}).openapi('OpaUndefinedDocument', { description: 'OPA’s answer for an undefined document' });

/**
 * The broker's own bearer on the OPA request, as on the broker check; a gateway whose OPA plugin
 * cannot send one puts it in the forwarded request as `x-broker-authorization` instead.
 */
function brokerOrLater(credentials: Authenticator<CheckingBroker>): Authenticator<CheckingBroker | null> {
  return {
    kinds: credentials.kinds,
    authenticate: (head) => (head.authorization ? credentials.authenticate(head) : Promise.resolve(null)),
  };
}

/** OPA's REST data API for the broker check: `POST /v1/data/grant_broker/check` answers as OPA would. */
export function opaDataRoutes(broker: BrokerService, gatewayCheck: GatewayCheck | undefined): Route[] {
  const auth = brokerOrLater(broker.credentials);

  /** The broker: the OPA request's bearer, else the forwarded request's `x-broker-authorization`; else 401. */
  async function callerOf(principal: CheckingBroker | null, seen: InputOf): Promise<CheckingBroker> {
    if (principal) return principal;
    const forwarded = seen.kind === 'gateway' ? seen.call.headers[BROKER_HEADER] : undefined;
    if (!forwarded)
      throw new ApiError(
        'unauthenticated',
        'send Authorization: Bearer <the broker token>',
        {},
        { 'WWW-Authenticate': 'Bearer realm="grant-broker"' },
      );
    return broker.credentials.authenticate({ authorization: forwarded });
  }

  async function document(principal: CheckingBroker | null, input: unknown) {
    const seen = inputOf(input);
    const caller = await callerOf(principal, seen);
    if (seen.kind === 'unknown') {
      throw new ApiError(
        'invalid_request',
        'input must be the body of POST /api/broker/check, or the input of Kong’s or APISIX’s OPA plugin',
      );
    }
    let request: CheckRequest;
    if (seen.kind === 'check') {
      const parsed = CheckBody.safeParse(seen.body);
      if (!parsed.success) {
        const errors = parsed.error.issues.map((issue) => ({ path: ['input', ...issue.path].join('.'), message: issue.message }));
        throw new ApiError('invalid_request', 'input is not a valid broker check', { errors });
      }
      request = parsed.data;
    } else {
      const mapped = gatewayCheck ? await gatewayCheck(caller, seen.call) : ({ kind: 'refuse', status: 403, reason: 'no_route' } as const);
      if (mapped.kind === 'pass') return { result: { allow: true, reason: 'no_tool_call', headers: {} } };
      if (mapped.kind === 'refuse') return refusedDocument(mapped.reason, mapped.status);
      request = mapped.request;
    }
    let answer: CheckAnswer;
    try {
      answer = await broker.check(caller, request);
    } catch (error) {
      const refused = refusalOf(error);
      if (refused) return refused;
      throw error;
    }
    return documentOf(answer);
  }

  const description =
    'Answers as OPA would, so the OPA plugins of Kong and APISIX (and any OPA client) call the broker check unchanged. The ' +
    'check runs exactly as POST /api/broker/check (policy, budget, approvals, credential, call record, decision log); ' +
    '`result.allow` is true only on allow and `decision_id` is the call’s id (report its outcome with POST ' +
    '/api/broker/calls/{callId}/outcome). The broker authenticates with its `bkt_` token as a bearer, or, from a gateway whose ' +
    'plugin sends no credential, as `x-broker-authorization: Bearer bkt_…` among the forwarded request’s headers. A gateway ' +
    'request is mapped through the broker’s route map (the agent’s credential is its `authorization`, the grant its ' +
    '`grant-id` header); one no route maps is `allow: false` with `reason: no_route`. Another broker’s grant is refused ' +
    'exactly as an unknown one (`allow: false`, `reason: not_found`, no decision id). Input of no known shape: 400. ' +
    'Postgres or Redis down: 503, never a result.';

  return [
    defineRoute(
      {
        method: 'post',
        path: '/v1/data/grant_broker/check',
        operationId: 'opaDataCheck',
        tag,
        summary: 'OPA data API: the broker check as the document data.grant_broker.check',
        description,
        auth,
        body: DataRequest,
        success: { status: 200, description: 'The document', schema: CheckDocument },
        direct: true,
      },
      async ({ body, principal }) => ({ body: await document(principal, body.input) }),
    ),
    defineRoute(
      {
        method: 'post',
        path: '/v1/data/grant_broker/check/allow',
        operationId: 'opaDataCheckAllow',
        tag,
        summary: 'OPA data API: only whether the check allows (data.grant_broker.check.allow)',
        description: `The same check, answered as the boolean document \`allow\`. ${description}`,
        auth,
        body: DataRequest,
        success: { status: 200, description: 'The document', schema: AllowDocument },
      },
      async ({ body, principal }) => {
        const { result, ...rest } = await document(principal, body.input);
        return { body: { result: result.allow, ...rest } };
      },
    ),
    defineRoute(
      {
        method: 'post',
        path: '/v1/data/*path',
        operationId: 'opaDataUndefined',
        tag,
        summary: 'OPA data API: any other document is undefined',
        description:
          'Answers `{}`, as OPA does for an undefined document (a gateway reads it as a denial). The broker authenticates as above.',
        auth,
        params: z.object({ path: z.string().max(1024).openapi({ description: 'The document’s path, e.g. `grant_broker/other`' }) }),
        body: DataRequest,
        success: { status: 200, description: 'Undefined', schema: Undefined },
      },
      async ({ body, principal }) => {
        await callerOf(principal, inputOf(body.input));
        return { body: {} };
      },
    ),
  ];
}
