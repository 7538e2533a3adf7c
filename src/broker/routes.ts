import { defineRoute, type Route } from '../kernel/route';
import type { BrokerService } from './service';
import { CheckBody, CheckResult } from './schemas';

const tag = 'Broker';

export function brokerRoutes(broker: BrokerService): Route[] {
  return [
    defineRoute(
      {
        method: 'post',
        path: '/api/broker/check',
        operationId: 'checkCall',
        tag,
        summary: 'Check one tool call through a grant before the broker makes it',
        description:
          'Decides from the whole grant chain (revocation, expiry, connection, tools, write mode, audience, runtime) and ' +
          'then takes one unit of every budget in the chain. Every check writes a call record. A denied call answers ' +
          '200 with `decision: deny`; `budget_exhausted` also sets `Retry-After` (seconds). Checked in this order: the ' +
          'broker credential (401/403), the body (400), the grant: only the grant’s own broker may ask (anything else: ' +
          '404), then the principal from the forwarded `subjectToken` (401 `subject_token_invalid` when it does not ' +
          'verify; an asserted `principal` is refused with 403 unless the deployment sets ' +
          'BROKER_TRUST_ASSERTED_PRINCIPAL), then the policy and the budget. Redis or Postgres unavailable: 503, never an allow. ' +
          'With `credential: true`: 422 `credential_unavailable` when the connection names no GitHub App, the tool declares no ' +
          'permissions or an allowed call names no repository; 503 `credential_unavailable` when GitHub refuses or does not ' +
          'answer in time (the call is recorded as denied with that reason and takes no budget unit).',
        auth: broker.credentials,
        body: CheckBody,
        success: { status: 200, description: 'The decision', schema: CheckResult },
        errors: ['not_found', 'subject_token_invalid', 'principal_assertion_refused', 'credential_unavailable'],
        direct: true,
      },
      async ({ body, principal }) => {
        const result = await broker.check(principal, body);
        const headers: Record<string, string> = {};
        if (result.retryAfterMs !== undefined) headers['Retry-After'] = String(Math.ceil(result.retryAfterMs / 1000));
        return { body: result, headers };
      },
    ),
  ];
}
