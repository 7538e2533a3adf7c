import type { AgentEvent } from './client';

/** A tool call as the agent asks its broker for it: the broker runs the pre-call check. */
export interface ToolCall {
  grantId: string;
  tool: string;
  args: Record<string, unknown>;
}

/** What the broker's check answered (CONTRACT §5, §9). */
export interface CallAnswer {
  decision: 'allow' | 'deny' | 'approval_required';
  reason: string;
  callId: string;
  approvalId?: string;
}

/** Asks the broker to make a call; a re-send carries the approval a human gave it. */
export type CallTool = (call: ToolCall & { approvalId?: string }) => Promise<CallAnswer>;

/**
 * Calls that wait for a human (CONTRACT §9). A write under `approve` answers `approval_required`
 * with an approval bound to this call's grant, tool, principal and arguments; the agent keeps the
 * call, and when `approval.decided` arrives it re-sends exactly the same call with the
 * `approvalId` (any other arguments would be refused as `approval_mismatch`), or gives up if the
 * human said no. The waiting calls live in memory: an agent that restarts asks again.
 */
export class ApprovalWaits {
  private readonly waiting = new Map<string, ToolCall>();

  constructor(private readonly callTool: CallTool) {}

  async call(call: ToolCall): Promise<CallAnswer> {
    const answer = await this.callTool(call);
    if (answer.decision === 'approval_required' && answer.approvalId) this.waiting.set(answer.approvalId, call);
    return answer;
  }

  get pending(): number {
    return this.waiting.size;
  }

  /** The handler of `approval.decided`: safe to run again (a handled approval is forgotten). */
  async onDecided(event: AgentEvent): Promise<{ note: string; answer?: CallAnswer }> {
    const approvalId = String(event.data.approvalId ?? '');
    const call = this.waiting.get(approvalId);
    if (!call) return { note: `approval ${approvalId} is not one this agent waits for` };
    this.waiting.delete(approvalId);
    if (event.data.state !== 'approved') return { note: `${call.tool} was not approved: dropped` };
    const answer = await this.callTool({ ...call, approvalId });
    return { note: `${call.tool} re-sent with its approval: ${answer.decision} (${answer.reason})`, answer };
  }
}
