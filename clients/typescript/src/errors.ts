/** A problem document the service answered (CONTRACT §1): the `code` is what to branch on. */
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

/** The broker check said no: `reason` is the deny reason; `retryAfterMs` with `budget_exhausted`. */
export class CallDenied extends Error {
  constructor(
    readonly reason: string,
    readonly callId: string,
    readonly retryAfterMs?: number,
    readonly orgMessage?: string,
  ) {
    super(`call denied: ${reason}${orgMessage ? ` (${orgMessage})` : ''}`);
    this.name = 'CallDenied';
  }
}

/** The call waits for a human (CONTRACT §9): re-send it with `approvalId` once approved. */
export class ApprovalRequired extends Error {
  constructor(
    readonly approvalId: string,
    readonly callId: string,
    readonly expiresAt: string,
  ) {
    super(`call waits for approval ${approvalId}`);
    this.name = 'ApprovalRequired';
  }
}
