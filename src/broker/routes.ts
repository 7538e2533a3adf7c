import type { Context } from 'koa';
import type { Deps } from '../deps';
import { authenticate } from '../http/auth';
import { defineRoute, type Route } from '../http/route';
import { presentCallRecord } from '../grants/presenters';
import { CallRecordSchema } from '../grants/schemas';
import { checkCall, type CheckRequest } from './check';
import { recordOutcome } from './outcome';
import { CallParams, CheckBody, CheckResult, OutcomeBody } from './schemas';

const tag = 'Broker';
const BROKER_BEARER = /^Bearer (bkt_[A-Za-z0-9]+)$/;

/**
 * The check route verifies its broker token itself, against the grant tree's cached facts, so a
 * warm check reads nothing from Postgres; defineRoute still validates the body and documents
 * the route as taking a broker token. Anything that is not a bkt_ bearer goes through the shared
 * authenticate (401, or 403 for another kind of credential).
 */
function brokerCheckRoute(): Route {
  const inner = defineRoute(
    {
      method: 'post',
      path: '/api/broker/check',
      tag,
      summary: 'Check one tool call through a grant before the broker makes it',
      description:
        'Decides from the whole grant chain (revocation, expiry, connection, tools, write mode, audience, runtime) and ' +
        'then takes one unit of every budget in the chain. Every check writes a call record. A denied call answers ' +
        '200 with `decision: deny`; `budget_exhausted` also sets `Retry-After` (seconds). Only the grant’s own broker ' +
        'may ask (anything else: 404). The principal comes from the forwarded `subjectToken` (401 ' +
        '`subject_token_invalid` when it does not verify); an asserted `principal` is refused (403) unless the ' +
        'deployment sets BROKER_TRUST_ASSERTED_PRINCIPAL. Redis or Postgres unavailable: 503, never an allow.',
      auth: [],
      body: CheckBody,
      success: { status: 200, description: 'The decision', schema: CheckResult },
      errors: ['not_found', 'subject_token_invalid', 'principal_assertion_refused'],
    },
    async ({ deps, body, ctx }) => {
      const result = await checkCall(deps, deps.broker, ctx.state.brokerToken as string, body as CheckRequest);
      const headers: Record<string, string> = {};
      if (result.retryAfterMs !== undefined) headers['Retry-After'] = String(Math.ceil(result.retryAfterMs / 1000));
      return { body: result, headers };
    },
  );
  return {
    ...inner,
    auth: ['broker'],
    async run(ctx: Context, deps: Deps) {
      const match = BROKER_BEARER.exec(ctx.get('authorization'));
      if (match?.[1]) {
        ctx.state.brokerToken = match[1];
      } else {
        await authenticate(ctx, deps, ['broker']); // throws 401 or 403; a valid bkt_ always matches above
      }
      await inner.run(ctx, deps);
    },
  };
}

export const brokerRoutes: Route[] = [
  brokerCheckRoute(),
  defineRoute(
    {
      method: 'post',
      path: '/api/broker/calls/:callId/outcome',
      tag,
      summary: 'Record the outcome of an allowed call, once',
      description: 'Only the grant’s own broker (anything else: 404). Again: 409 `outcome_already_recorded`; a denied call: 409 `call_denied`.',
      auth: ['broker'],
      params: CallParams,
      body: OutcomeBody,
      success: { status: 200, description: 'The completed call record', schema: CallRecordSchema },
      errors: ['outcome_already_recorded', 'call_denied'],
    },
    async ({ deps, principal, params, body }) => ({
      body: presentCallRecord(await recordOutcome(deps, principal.brokerId, params.callId, body)),
    }),
  ),
];
