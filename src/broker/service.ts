import { brokerCheckCredentials } from './authenticator';
import { checkCall } from './check';
import type { BrokerDeps } from './deps';

/** The broker's surface: the pre-call check. */
export function createBrokerService(deps: BrokerDeps) {
  return {
    check: checkCall.bind(null, deps),
    credentials: brokerCheckCredentials({ resolveCredential: deps.resolveCredential, tokens: deps.brokerTokens, clock: deps.clock }),
    /** Resolves once every queued call record is written (graceful shutdown). */
    settle: () => deps.trail.settle(),
  };
}

export type BrokerService = ReturnType<typeof createBrokerService>;
