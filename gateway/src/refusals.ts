import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallDenied, DenialExplanation } from '@grant-broker/client';

/** What a refusal carries for a program; the text says the same for a model. */
export interface RefusalDetail {
  reason: string;
  message?: string;
  retryAfterMs?: number;
  approvalId?: string;
  /** With `approval_required`: the approval's page in the web console, where a person decides it. */
  consoleUrl?: string;
  /** The rule that refused, the level of the chain and what would unlock the call. */
  explanation?: DenialExplanation;
}

/** A refused or failed call as an MCP tool error: readable text, and `structuredContent` for a program. */
export const refusal = (text: string, detail: RefusalDetail): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text }],
  structuredContent: { ...detail },
});

/** A deny of the grant broker's check, in words a model can act on. */
export function denialText(denied: CallDenied): string {
  switch (denied.reason) {
    case 'budget_exhausted':
      return `Denied: this grant's call budget is used up. Retry after ${Math.ceil((denied.retryAfterMs ?? 0) / 1000)} s.`;
    case 'resource_not_allowed':
      return 'Denied: this grant does not cover that repository, ref or path.';
    case 'resource_invalid':
      return 'Denied: a repository, ref or path in the arguments is not in its plain form (no "..", ".", empty or absolute path segments).';
    case 'tool_not_allowed':
      return 'Denied: this grant does not include that tool.';
    case 'approval_denied':
      return 'Denied: a person refused to approve this call. Calling it again asks a person afresh.';
    case 'approval_pending':
      return "Not yet: a person has not decided on this call's approval. Call again with exactly the same arguments once they have.";
    default:
      return `Denied by the grant broker: ${denied.reason}${denied.orgMessage ? ` (${denied.orgMessage})` : ''}.`;
  }
}

export function denialDetail(denied: CallDenied): RefusalDetail {
  return {
    reason: denied.reason,
    ...(denied.orgMessage ? { message: denied.orgMessage } : {}),
    ...(denied.retryAfterMs !== undefined ? { retryAfterMs: denied.retryAfterMs } : {}),
    // For the model and the human behind it: which rule, where in the chain, and what would change it.
    ...(denied.explanation ? { explanation: denied.explanation } : {}),
  };
}
