import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { page } from '../kernel/schema';
import { presentCallRecord } from './presenters';
import {
  CallParams,
  CallRecordSchema,
  GrantParams,
  GrantUsageSchema,
  ListCallsQuery,
  MAX_OUTCOMES_PER_BATCH,
  OutcomeBatchBody,
  OutcomeAnswer,
  OutcomeBatchResult,
  OutcomeBody,
} from './schemas';
import type { TrailService } from './service';

/** A grant's call records and budget use: for whoever may read the grant, asked first. */
export function grantTrailRoutes(trail: TrailService, auth: CredentialAuthenticators): Route[] {
  const reader = auth.credentials('human', 'agent');
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/grants/:grantId/calls',
        operationId: 'listGrantCalls',
        tag: 'Grants',
        summary: 'The call trail of a grant, newest first, with the read scope of the grant',
        auth: reader,
        params: GrantParams,
        query: ListCallsQuery,
        success: { status: 200, description: 'Call records, newest first', schema: page(CallRecordSchema) },
      },
      async ({ principal, params, query }) => ({ body: await trail.callsOfGrant(principal, params.grantId, query) }),
    ),
    defineRoute(
      {
        method: 'get',
        path: '/api/grants/:grantId/usage',
        operationId: 'getGrantUsage',
        tag: 'Grants',
        summary: "A grant's budget used and remaining now, and how many grants a revocation would take with it",
        description: 'Whoever may read the grant (else 404).',
        auth: reader,
        params: GrantParams,
        success: { status: 200, description: 'Use and subtree', schema: GrantUsageSchema },
      },
      async ({ principal, params }) => ({ body: await trail.usageOfGrant(principal, params.grantId) }),
    ),
  ];
}

/** The outcome of an allowed call, reported by the broker that made it. */
export function outcomeRoutes(trail: TrailService, auth: CredentialAuthenticators): Route[] {
  return [
    defineRoute(
      {
        method: 'post',
        path: '/api/broker/calls/:callId/outcome',
        operationId: 'recordCallOutcome',
        tag: 'Broker',
        summary: 'Record the outcome of an allowed call, once',
        description:
          'Only the grant’s own broker (anything else: 404). Again: 409 `outcome_already_recorded`; a denied call: 409 `call_denied`; more than 24 days after the check: 409 `outcome_too_late`.',
        auth: auth.credentials('broker'),
        params: CallParams,
        body: OutcomeBody,
        success: { status: 200, description: 'The completed call record, with the receipt of its outcome', schema: OutcomeAnswer },
        errors: ['outcome_already_recorded', 'call_denied', 'outcome_too_late'],
      },
      async ({ principal, params, body }) => {
        const record = presentCallRecord(await trail.recordOutcome(principal.brokerId, params.callId, body));
        const receipt = record.outcomeLeafIndex === null ? {} : { receipt: { leafIndex: record.outcomeLeafIndex } };
        return { body: { ...record, ...receipt } };
      },
    ),
    defineRoute(
      {
        method: 'post',
        path: '/api/broker/outcomes',
        operationId: 'recordCallOutcomes',
        tag: 'Broker',
        summary: `Record the outcomes of up to ${MAX_OUTCOMES_PER_BATCH} allowed calls at once`,
        description:
          'For a broker that reports off its calls’ path. Each outcome is taken as `POST /api/broker/calls/{callId}/outcome` takes it, and is durable before the answer; its status says how it went (a call of another broker’s grant: `not_found`). A 5xx promises nothing: send the batch again, and what an earlier send recorded answers `outcome_already_recorded`.',
        auth: auth.credentials('broker'),
        body: OutcomeBatchBody,
        success: { status: 200, description: 'One status per outcome, in the order sent', schema: OutcomeBatchResult },
      },
      async ({ principal, body }) => ({ body: { results: await trail.recordOutcomes(principal.brokerId, body.outcomes) } }),
    ),
  ];
}
