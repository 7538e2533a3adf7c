import type { AgentEvent } from './client';

/** A tool call as the agent asks its broker for it: the broker runs the pre-call check. */
export interface ToolCall {
  grantId: string;
  tool: string;
  args: Record<string, unknown>;
}

/** What the broker's check answered, and what the call gave when it was made. */
export interface CallAnswer {
  decision: 'allow' | 'deny' | 'approval_required';
  reason: string;
  /** The call record; absent only when the call was allowed and the tool failed (the SDK rethrows the tool's error). */
  callId?: string;
  approvalId?: string;
  /** approval_required: until when a human may decide. */
  expiresAt?: string;
  /** deny with budget_exhausted: when to try again. */
  retryAfterMs?: number;
  /** allow: the tool's result, or its error when the tool failed after the check allowed it. */
  result?: unknown;
  error?: string;
}

/** Asks the broker to make a call; a re-send carries the approval a human gave it. */
export type CallTool = (call: ToolCall & { approvalId?: string }) => Promise<CallAnswer>;

interface Waiting {
  call: ToolCall;
  expiresAt: number;
}

/**
 * Calls that wait for a human. A write under `approve` answers `approval_required`
 * with an approval bound to this call's grant, tool, principal and arguments; the agent keeps the
 * call, and when `approval.decided` arrives it re-sends exactly the same call with the
 * `approvalId` (any other arguments would be refused as `approval_mismatch`), or gives up if the
 * human said no.
 *
 * A kept call is forgotten only once its re-send is answered: if the re-send fails (the broker
 * cannot be reached), `onDecided` throws, the agent's loop leaves the event unacknowledged, and the
 * redelivered event re-sends the same call again. The waiting calls live in memory: an agent that
 * restarts asks again.
 */
export class ApprovalWaits {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly callTool: CallTool,
    private readonly now: () => number = Date.now,
  ) {}

  async call(call: ToolCall): Promise<CallAnswer> {
    const answer = await this.callTool(call);
    if (answer.decision === 'approval_required' && answer.approvalId) {
      const expiresAt = answer.expiresAt ? Date.parse(answer.expiresAt) : Number.POSITIVE_INFINITY;
      this.waiting.set(answer.approvalId, { call, expiresAt });
    }
    return answer;
  }

  /** Calls still waiting for a decision; one whose approval expired undecided is dropped (ask again). */
  get pending(): number {
    for (const [approvalId, { expiresAt }] of this.waiting) if (expiresAt <= this.now()) this.waiting.delete(approvalId);
    return this.waiting.size;
  }

  /** The handler of `approval.decided`: safe to run again (an answered call is forgotten). */
  async onDecided(event: AgentEvent): Promise<{ note: string; answer?: CallAnswer }> {
    const approvalId = String(event.data.approvalId ?? '');
    const waiting = this.waiting.get(approvalId);
    if (!waiting) return { note: `approval ${approvalId} is not one this agent waits for` };
    const { call } = waiting;
    if (event.data.state !== 'approved') {
      this.waiting.delete(approvalId);
      return { note: `${call.tool} was not approved (${String(event.data.state)}): dropped` };
    }
    // Throws when the broker cannot be reached: the call stays kept for the redelivered event.
    const answer = await this.callTool({ ...call, approvalId });
    this.waiting.delete(approvalId);
    const outcome = answer.error ? `, but the tool failed: ${answer.error}` : '';
    return { note: `${call.tool} re-sent with its approval: ${answer.decision} (${answer.reason})${outcome}`, answer };
  }
}
