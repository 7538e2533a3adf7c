import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { page } from '../kernel/schema';
import { ApprovalParams, ApprovalSchema, DecideBody, ListApprovalsQuery, WaitQuery } from './schemas';
import type { ApprovalsService } from './service';

const tag = 'Approvals';
const DECIDERS =
  "Deciders: the grant's connection owner, or an owner or admin of the grant's target pod; never the call's own principal " +
  '(403 `self_approval`); anyone else: 404. Only human credentials: an agent can never decide.';

export function approvalRoutes(approvals: ApprovalsService, auth: CredentialAuthenticators): Route[] {
  const human = auth.credentials('human');
  const decide = (state: 'approved' | 'denied', action: 'approve' | 'deny') =>
    defineRoute(
      {
        method: 'post',
        path: `/api/approvals/:approvalId/${action}`,
        operationId: `${action}Approval`,
        tag,
        summary: `${action === 'approve' ? 'Approve' : 'Deny'} one call that waits for approval`,
        description: `${DECIDERS} Once: again is 409 \`approval_already_decided\`; too late is 409 \`approval_expired\`; a grant no longer active: 422 \`grant_not_usable\`. The agent gets \`approval.decided\`.`,
        auth: human,
        params: ApprovalParams,
        body: DecideBody,
        success: { status: 200, description: 'The decided approval', schema: ApprovalSchema },
        errors: ['not_found', 'self_approval', 'approval_already_decided', 'approval_expired', 'grant_not_usable'],
      },
      async ({ principal, params, body }) => ({ body: await approvals.decide(principal, params.approvalId, state, body.note) }),
    );
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/approvals',
        operationId: 'listApprovals',
        tag,
        summary: 'Approvals the caller may decide, newest first',
        description:
          `${DECIDERS} Filter by \`state\` (\`pending\` for what waits) and \`requestedAfter\`. With \`waitMs\`, an answer ` +
          'that would hold no approval waits until one the caller may decide is requested (on any replica), `waitMs` passes ' +
          'or the client goes away; past 500 waiting requests on one replica it answers at once.',
        auth: human,
        query: ListApprovalsQuery,
        success: { status: 200, description: 'A page of approvals', schema: page(ApprovalSchema) },
        errors: [],
      },
      async ({ principal, query, signal }) => ({ body: await approvals.list(principal, query, signal) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/approvals/:approvalId',
        operationId: 'getApproval',
        tag,
        summary: 'One approval',
        description: DECIDERS,
        auth: human,
        params: ApprovalParams,
        success: { status: 200, description: 'The approval', schema: ApprovalSchema },
        errors: ['not_found'],
      },
      async ({ principal, params }) => ({ body: await approvals.get(principal, params.approvalId) }),
    ),
    decide('approved', 'approve'),
    decide('denied', 'deny'),
    defineRoute(
      {
        method: 'get',
        path: '/api/broker/approvals/:approvalId',
        operationId: 'waitForApproval',
        tag,
        summary: 'The state of an approval, long-polled by the broker',
        description: "Only the grant's own broker (anything else: 404). Answers at once unless `pending`; else waits up to `waitMs`.",
        auth: auth.credentials('broker'),
        params: ApprovalParams,
        query: WaitQuery,
        success: { status: 200, description: 'The approval', schema: ApprovalSchema },
        errors: ['not_found'],
      },
      async ({ principal, params, query }) => ({
        body: await approvals.waitForBroker(principal.brokerId, params.approvalId, query.waitMs),
      }),
    ),
  ];
}
