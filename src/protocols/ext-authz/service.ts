import type { CheckingBroker } from '../../broker/authenticator';
import type { CheckAnswer, CheckRequest } from '../../broker/check';
import type { CredentialResolver } from '../../credentials/authenticators';
import { isDependencyFailure } from '../../kernel/dependency';
import { ApiError } from '../../kernel/errors';
import type { Logger } from '../../kernel/log';
import type { CallPrincipal } from '../../kernel/principals';
import type { Authenticator } from '../../kernel/route';
import { denial, fromAnswer, subjectTokenOf, toCheck, type ForwardedCall, type Verdict } from './mapping';
import type { RouteMap } from './route-map';

/**
 * Envoy external authorization, whichever transport asked (./http.ts, ./grpc.ts): the broker is
 * authenticated as on `POST /api/broker/check`, the forwarded request mapped to that check's
 * input (./mapping.ts), the same check run, its answer mapped back. Nothing here decides a call.
 */
export interface ExtAuthzDeps {
  /** The broker check's use case (src/broker/check), exactly as its route runs it. */
  check(broker: CheckingBroker, request: CheckRequest): Promise<CheckAnswer>;
  /** The broker check's authenticator. */
  brokerCredentials: Authenticator<CheckingBroker>;
  /** The check body's own rules (schema and hostile input), so an adapter's input is judged alike. */
  validate(body: unknown): CheckRequest;
  routesOf(brokerId: string): Promise<RouteMap>;
  /** Verifies the agent's credential of an MCP message that passes without a check. */
  resolveCredential: CredentialResolver;
  /**
   * MCP hosts' access tokens (CONTRACT §20): the grant one names (unverified, to find the grant;
   * the check verifies the token for it), and its verification for a message that passes without a check.
   */
  accessTokens: {
    claimedGrant(token: string): string | undefined;
    verify(token: string): Promise<{ agentId: string; grantId: string } | null | undefined>;
  };
  log: Logger;
}

/** A forwarded request as the broker check's input, for another adapter (OPA's data API) to run. */
export type ForwardedCheck =
  { kind: 'check'; request: CheckRequest } | { kind: 'pass'; subject: CallPrincipal } | { kind: 'refuse'; status: number; reason: string };

export interface ExtAuthzService {
  /** The answer for one forwarded request; `brokerAuthorization` is `Bearer bkt_…`. Never throws. */
  authorize(call: ForwardedCall, brokerAuthorization: string | undefined): Promise<Verdict>;
  /**
   * The same mapping through the broker's route map for an authenticated broker, without running
   * the check: a request with no tool call passes only once the agent's credential verifies.
   */
  checkOf(broker: CheckingBroker, call: ForwardedCall): Promise<ForwardedCheck>;
}

export function createExtAuthzService(deps: ExtAuthzDeps): ExtAuthzService {
  async function decide(call: ForwardedCall, brokerAuthorization: string | undefined): Promise<Verdict> {
    const broker = await deps.brokerCredentials.authenticate({ authorization: brokerAuthorization });
    const mapped = toCheck(call, await deps.routesOf(broker.brokerId), tokenGrantOf(call));
    if (mapped.kind === 'refuse') return denial(mapped.status, mapped.reason, mapped.detail);
    if (mapped.kind === 'pass') {
      // No call to record, so nothing confirms a remembered broker token later: both verify now.
      const [asBroker, subject] = await Promise.all([
        deps.resolveCredential(brokerAuthorization!.replace(/^Bearer +/i, '')),
        subjectOf(mapped.subjectToken),
      ]);
      if (asBroker?.kind !== 'broker') return denial(401, 'unauthenticated', 'the broker credential is invalid or revoked');
      if (!subject) return denial(401, 'subject_token_invalid', "the agent's credential is invalid, expired or revoked");
      return { allow: true, setHeaders: {}, removeHeaders: ['authorization', 'grant-id'] };
    }
    const request = deps.validate(mapped.check);
    return fromAnswer(await deps.check(broker, request));
  }

  async function checkOf(broker: CheckingBroker, call: ForwardedCall): Promise<ForwardedCheck> {
    const mapped = toCheck(call, await deps.routesOf(broker.brokerId), tokenGrantOf(call));
    if (mapped.kind === 'refuse') return { kind: 'refuse', status: mapped.status, reason: mapped.reason };
    if (mapped.kind === 'check') return { kind: 'check', request: deps.validate(mapped.check) };
    const subject = await subjectOf(mapped.subjectToken);
    return subject ? { kind: 'pass', subject } : { kind: 'refuse', status: 401, reason: 'subject_token_invalid' };
  }

  function tokenGrantOf(call: ForwardedCall): string | undefined {
    const token = subjectTokenOf(call);
    return token === undefined ? undefined : deps.accessTokens.claimedGrant(token);
  }

  /** Who a credential verifies as: an agent (its runtime token or a host's access token) or a person; undefined: nobody. */
  async function subjectOf(token: string): Promise<CallPrincipal | undefined> {
    const access = await deps.accessTokens.verify(token);
    if (access !== undefined) return access ? { kind: 'agent', id: access.agentId } : undefined;
    const subject = await deps.resolveCredential(token);
    if (subject?.kind === 'agent') return { kind: 'agent', id: subject.agentId };
    if (subject?.kind === 'human') return { kind: 'user', id: subject.userId };
    return undefined;
  }

  return {
    checkOf,
    async authorize(call, brokerAuthorization) {
      try {
        return await decide(call, brokerAuthorization);
      } catch (error) {
        return refusalOf(error, deps.log);
      }
    },
  };
}

/** What a thrown refusal or failure means to Envoy: a denial, or 503 (fail closed, never an allow). */
function refusalOf(error: unknown, log: Logger): Verdict {
  if (error instanceof ApiError) {
    if (error.code === 'not_found') return denial(403, 'not_found', 'no such grant');
    if (error.code === 'unauthenticated') return denial(401, 'unauthenticated', 'the broker credential is invalid or revoked');
    if (error.code === 'credential_not_accepted') return denial(401, 'unauthenticated', 'send a broker token as the broker credential');
    if (error.code === 'credential_unavailable' && error.status === 422) return denial(403, error.code, error.message);
    if (error.status >= 500) return denial(503, error.code, error.message);
    return denial(error.status, error.code, error.message);
  }
  if (isDependencyFailure(error)) {
    log.error({ err: error }, 'ext_authz: dependency unavailable');
    return denial(503, 'dependency_unavailable', 'a dependency is unavailable; nothing was allowed');
  }
  log.error({ err: error }, 'ext_authz: unexpected error');
  return denial(503, 'internal_error', 'an unexpected error occurred; nothing was allowed');
}
