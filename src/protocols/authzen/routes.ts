import type { BrokerService } from '../../broker/service';
import { defineRoute, type Route } from '../../kernel/route';
import { evaluate, evaluateInOrder } from './evaluate';
import { evaluationsOf } from './mapping';
import { Decision, EvaluationRequest, EvaluationsRequest, EvaluationsResponse, MAX_EVALUATIONS, PdpMetadata } from './schemas';

const tag = 'AuthZEN';

const PROFILE =
  'The subject is the agent: `subject: {type: "agent", id: <agentId>, properties: {token: <its runtime or access token>}}` ' +
  '(a human: `type: "user"` with the forwarded JWT); `action.name` is the tool; `resource: {type: "grant", id: <grantId>, ' +
  'properties: {args}}`. The broker authenticates with its own `bkt_` token, as on POST /api/broker/check, and runs that very ' +
  'check: the same policy, budget, approvals, credential, call record and decision log. `decision` is true only on allow; ' +
  '`context` carries `reason`, `callId` (report the outcome with POST /api/broker/calls/{callId}/outcome), and with a ' +
  'refusal its `explanation`, `approvalId` (approval_required) or `retryAfterMs` (budget_exhausted). An evaluation the check ' +
  'cannot take (another broker’s grant, answered exactly as an unknown one: `not_found`; a token that does not verify; a ' +
  '`subject.id` that is not the token’s; another subject or resource type) is `decision: false` with `context.error` and no ' +
  'call is recorded. A missing subject, action or resource is a 400; Postgres or Redis down is a 503, never a decision.';

/** OpenID AuthZEN 1.0: the evaluation and evaluations APIs and the PDP metadata, over the broker check. */
export function authzenRoutes(broker: BrokerService, options: { baseUrl: string }): Route[] {
  const metadata = {
    policy_decision_point: options.baseUrl,
    access_evaluation_endpoint: `${options.baseUrl}/access/v1/evaluation`,
    access_evaluations_endpoint: `${options.baseUrl}/access/v1/evaluations`,
  };
  return [
    defineRoute(
      {
        method: 'post',
        path: '/access/v1/evaluation',
        operationId: 'authzenEvaluation',
        tag,
        summary: 'AuthZEN 1.0 Access Evaluation: one broker check',
        description: PROFILE,
        auth: broker.credentials,
        body: EvaluationRequest,
        success: { status: 200, description: 'The decision', schema: Decision },
        direct: true,
      },
      async ({ body, principal }) => ({ body: await evaluate(broker.check, principal, body) }),
    ),
    defineRoute(
      {
        method: 'post',
        path: '/access/v1/evaluations',
        operationId: 'authzenEvaluations',
        tag,
        summary: 'AuthZEN 1.0 Access Evaluations: several broker checks, in order',
        description:
          `${PROFILE} Up to ${MAX_EVALUATIONS} evaluations, checked one after another in order; top-level subject, action, ` +
          'resource and context are defaults a member’s own key replaces. `options.evaluations_semantic`: `execute_all` ' +
          '(default) answers every one; `deny_on_first_deny` stops after the first false, `permit_on_first_permit` after the ' +
          'first true, and the evaluations after it are neither checked nor answered (no record, no budget unit). Without ' +
          '`evaluations` (or with an empty array) the request is one evaluation and the answer one decision.',
        auth: broker.credentials,
        body: EvaluationsRequest,
        success: { status: 200, description: 'The decisions, in order', schema: EvaluationsResponse },
      },
      async ({ body, principal }) => {
        const { single, evaluations } = evaluationsOf(body);
        const decisions = await evaluateInOrder(broker.check, principal, evaluations, body.options?.evaluations_semantic ?? 'execute_all');
        return { body: single ? decisions[0]! : { evaluations: decisions } };
      },
    ),
    defineRoute(
      {
        method: 'get',
        path: '/.well-known/authzen-configuration',
        operationId: 'authzenConfiguration',
        tag,
        summary: 'AuthZEN 1.0 Policy Decision Point metadata',
        description: 'Where the evaluation endpoints are, under the service’s public URL (PUBLIC_URL). No search endpoint is offered.',
        auth: null,
        success: { status: 200, description: 'The metadata', schema: PdpMetadata },
      },
      async () => ({ body: metadata }),
    ),
  ];
}
