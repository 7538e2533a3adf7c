import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ApiProblem, ApprovalRequired, CallDenied, type GrantBrokerClient } from '@grant-broker/client';
import { denialDetail, denialText, refusal } from './refusals';
import { inStage } from './tracing';
import type { MappedTool } from './tool-catalog';
import { UpstreamFailure, type Upstream } from './upstream/upstream';

/**
 * What one agent session calls with: who it is, and on which grant. Nothing of a call's approval:
 * the grant broker recognizes the identical call (agent, grant, tool, arguments) whatever the
 * session or process it comes back from, so an agent that reconnects keeps its approval.
 */
export interface CallContext {
  grantId: string;
  agentToken: string;
  /** The grant broker answered a check of this grant, under this version of it. */
  checked?: (grantVersion: string | undefined) => void;
  /** The grant broker refused a check of this grant. */
  refused?: () => void;
  /** The grant broker refused the grant itself for good (revoked, expired) or the token for it: no later call can succeed. */
  ended?: () => void;
}

/** The check's refusals of the grant or of the token itself, as opposed to this one call. */
const GRANT_OVER = new Set(['revoked', 'expired']);

/**
 * The upstream answered with a tool error (`isError: true`): the call was made and failed. Thrown
 * inside the check so the outcome is reported `failed`; the upstream's own result is still what the
 * agent gets.
 */
class ToolReportedError extends Error {
  readonly code = 'tool_error';
  constructor(readonly result: CallToolResult) {
    super('the tool reported an error');
  }
}

/**
 * One tool call through the gateway: the arguments against the tool's input schema (before the
 * check: a call its own schema forbids is neither recorded, nor counted, nor sent), then the SDK's
 * `withCheck`: the grant broker's check with the agent's token forwarded as `subjectToken` (and a
 * minted credential asked for when the upstream wants one), the upstream only on allow, and the
 * outcome handed to the client's batch (./gateway.ts), off the call's path. Every refusal and
 * failure is a tool error with `structuredContent`.
 */
export async function checkedCall(
  broker: GrantBrokerClient,
  upstream: Upstream,
  tool: MappedTool,
  args: Record<string, unknown>,
  context: CallContext,
  /** The approval this call names (one a person denied, for the host's retry; ./approvals-in-band.ts). */
  approvalId?: string,
): Promise<CallToolResult> {
  const problem = tool.argumentsProblem(args);
  if (problem) return refusal(`Invalid arguments for ${tool.name}: ${problem}. The call was not made.`, { reason: 'invalid_arguments' });
  try {
    const { result } = await inStage('grant-broker check', { 'gen_ai.tool.name': tool.mapping.grantTool }, (checked) =>
      broker.withCheck(
        {
          grantId: context.grantId,
          tool: tool.mapping.grantTool,
          args,
          subjectToken: context.agentToken,
          ...(approvalId ? { approvalId } : {}),
          ...(upstream.wantsCredential ? { credential: true } : {}),
        },
        async (check) => {
          checked();
          context.checked?.(check.grantVersion);
          let answer: CallToolResult;
          try {
            answer = await inStage(`upstream tools/call ${tool.name}`, { 'gen_ai.tool.name': tool.name }, () =>
              upstream.callTool(tool.name, args, check.credential?.token),
            );
          } catch (error) {
            // Whatever the upstream threw is its failure, never taken for the grant broker's.
            throw error instanceof UpstreamFailure ? error : new UpstreamFailure('upstream_error', 'the upstream failed');
          }
          if (answer.isError) throw new ToolReportedError(answer);
          return answer;
        },
      ),
    );
    return result;
  } catch (error) {
    if (error instanceof CallDenied) context.refused?.();
    const over =
      (error instanceof CallDenied && GRANT_OVER.has(error.reason)) ||
      (error instanceof ApiProblem && error.code === 'subject_token_invalid');
    if (over) context.ended?.();
    return refusalFor(error);
  }
}

function refusalFor(error: unknown): CallToolResult {
  if (error instanceof ToolReportedError) return error.result;
  if (error instanceof ApprovalRequired) {
    const where = error.consoleUrl ? ` at ${error.consoleUrl}` : '';
    return refusal(
      `This call needs a human's approval (approval ${error.approvalId}, until ${error.expiresAt}). ` +
        `Ask a person to approve it${where}, then call this tool again with exactly the same arguments.`,
      { reason: 'approval_required', approvalId: error.approvalId, ...(error.consoleUrl ? { consoleUrl: error.consoleUrl } : {}) },
    );
  }
  if (error instanceof CallDenied) return refusal(denialText(error), denialDetail(error));
  if (error instanceof UpstreamFailure) {
    return refusal(`The call was allowed but ${error.message}.`, { reason: error.reason });
  }
  if (error instanceof ApiProblem && error.status < 500)
    return refusal(`The grant broker refused the call: ${error.code}.`, { reason: error.code });
  // Fail closed: with no answer from the grant broker, no call is made.
  return refusal('The grant broker could not be reached; the call was not made. Try again later.', { reason: 'broker_unavailable' });
}
