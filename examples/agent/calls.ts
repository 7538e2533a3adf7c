import { ApprovalRequired, CallDenied, type GrantBrokerClient } from '@grant-broker/client';
import type { CallAnswer, CallTool, ToolCall } from './approvals';

/**
 * The agent's tool calls through a broker that runs the SDK's `withCheck`: the pre-call check
 * with the agent's own token forwarded as `subjectToken`, the tool only on allow, its outcome
 * reported. Here the broker lives in the agent's process (one deployment, the broker's `bkt_`
 * token and the connector's credentials beside the agent's); examples/mcp-broker is the same
 * loop as a separate process the agent talks to over MCP, which keeps those secrets from it.
 *
 * Every answer comes back as a CallAnswer; only a broker that cannot be reached throws (the SDK
 * never re-sends a check the service may have counted).
 */
export function brokeredCalls(broker: GrantBrokerClient, subjectToken: string, run: (call: ToolCall) => Promise<unknown>): CallTool {
  return async ({ approvalId, ...call }) => {
    let toolError: unknown;
    let ran = false;
    try {
      const made = await broker.withCheck({ ...call, subjectToken, ...(approvalId ? { approvalId } : {}) }, async () => {
        ran = true;
        try {
          return await run(call);
        } catch (error) {
          toolError = error;
          throw error;
        }
      });
      return { decision: 'allow', reason: made.check.reason, callId: made.check.callId, result: made.result };
    } catch (error) {
      if (error instanceof ApprovalRequired) {
        return {
          decision: 'approval_required',
          reason: 'approval_required',
          callId: error.callId,
          approvalId: error.approvalId,
          expiresAt: error.expiresAt,
        };
      }
      if (error instanceof CallDenied) {
        const answer: CallAnswer = { decision: 'deny', reason: error.reason, callId: error.callId };
        return error.retryAfterMs === undefined ? answer : { ...answer, retryAfterMs: error.retryAfterMs };
      }
      // The check allowed it and the tool itself failed (withCheck reported `failed`): an answer too.
      if (ran && error === toolError) {
        return { decision: 'allow', reason: 'allowed', error: error instanceof Error ? error.message : String(error) };
      }
      throw error;
    }
  };
}
