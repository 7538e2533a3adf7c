import type { components } from './schema';

/** A problem document the service answered: the `code` is what to branch on. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: Record<string, unknown>,
  ) {
    super(`${status} ${code}: ${detail}`);
    this.name = 'ApiProblem';
  }

  /** 401/403: the token is wrong, deleted, or its agent was uninstalled. Retrying will not help. */
  get credentialRejected(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** Why a check was refused and what would change it, as the service's policy says. */
export type DenialExplanation = components['schemas']['DenialExplanation'];

/**
 * The broker check said no: `reason` is the deny reason; `retryAfterMs` with `budget_exhausted`;
 * `explanation` the rule that refused, the level of the chain (0 is the root) and what would
 * unlock the call (`attenuate_from_parent`, `ask_connection_owner`, `request_approval`, `wait`, `none`).
 */
export class CallDenied extends Error {
  constructor(
    readonly reason: string,
    readonly callId: string,
    readonly retryAfterMs?: number,
    readonly orgMessage?: string,
    readonly explanation?: DenialExplanation,
  ) {
    super(`call denied: ${reason}${orgMessage ? ` (${orgMessage})` : ''}`);
    this.name = 'CallDenied';
  }
}

/** The call waits for a human (who decides it at `consoleUrl`): re-send it with `approvalId` once approved. */
export class ApprovalRequired extends Error {
  constructor(
    readonly approvalId: string,
    readonly callId: string,
    readonly expiresAt: string,
    /** The approval's page in the web console; absent from a service older than this client. */
    readonly consoleUrl?: string,
  ) {
    super(`call waits for approval ${approvalId}`);
    this.name = 'ApprovalRequired';
  }
}

/**
 * The call was made but its outcome could not be reported (`POST /api/broker/calls/:id/outcome`
 * failed). The call's own result is not lost: `withCheck` returns it with this as `outcomeError`
 * and hands it to `onOutcomeError`. The record stays `pending`; report it again with
 * `recordOutcome(callId, outcome)` once the service answers (a second report is a 409).
 */
export class OutcomeNotRecorded extends Error {
  constructor(
    readonly callId: string,
    readonly outcome: 'succeeded' | 'failed',
    override readonly cause: unknown,
  ) {
    super(`the ${outcome} outcome of ${callId} was not recorded: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'OutcomeNotRecorded';
  }
}
