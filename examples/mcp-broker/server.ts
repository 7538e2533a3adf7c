import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { canonicalize } from 'json-canonicalize';
import { ApiProblem, ApprovalRequired, CallDenied, createClient, type Grant } from '@grant-broker/client';
import { ConnectorError, UnsendableCall, type CodeHostConnector } from './connector';
import { argumentsProblem, TOOLS, toolNamed } from './tools';

export interface McpBrokerOptions {
  /** The grant broker (GRANT_BROKER_URL) and this broker's own `bkt_…` token. */
  brokerUrl: string;
  brokerToken: string;
  /** The grant the agent acts under, and the agent's own token, forwarded as `subjectToken`. */
  grantId: string;
  subjectToken: string;
  connector: CodeHostConnector;
  fetch?: typeof fetch;
}

/**
 * A reference broker as an MCP server (README "Clients"). For every tool call: the grant broker's
 * check (the agent's token forwarded as `subjectToken`), the connector only on allow, the outcome
 * reported; a denial comes back as an MCP tool error a model can read and act on. The tool list
 * shows only what the grant allows now, read afresh on every listing.
 */
export function createMcpBroker(options: McpBrokerOptions): Server {
  const asBroker = createClient({ baseUrl: options.brokerUrl, token: options.brokerToken, fetch: options.fetch });
  const asAgent = createClient({ baseUrl: options.brokerUrl, token: options.subjectToken, fetch: options.fetch });
  /** Calls a human was asked to approve, by tool and canonical arguments: the same call re-sent carries its approval. */
  const approvals = new Map<string, string>();

  const server = new Server({ name: 'grant-broker-mcp', version: '0.1.0' }, { capabilities: { tools: {} } });

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const grant = await asAgent.unwrap(asAgent.api.GET('/api/grants/{grantId}', { params: { path: { grantId: options.grantId } } }));
    return {
      tools: TOOLS.filter((tool) => allowsListing(grant, tool.name, tool.access)).map((tool) => ({
        name: tool.name,
        description:
          tool.access === 'write' && grant.writeMode === 'approve'
            ? `${tool.description} Each call waits for a human's approval.`
            : tool.description,
        inputSchema: tool.inputSchema,
      })),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = toolNamed(request.params.name);
    if (!tool) return refusal(`no tool ${request.params.name} on this connector`);
    const args = request.params.arguments ?? {};
    // Before the check: a call its own schema forbids is neither recorded, nor counted, nor sent.
    const problem = argumentsProblem(tool, args);
    if (problem) return refusal(`Invalid arguments for ${tool.name}: ${problem}. The call was not made.`, { reason: 'invalid_arguments' });
    const key = `${tool.name}\u0000${canonicalize(args)}`;
    const approvalId = approvals.get(key);
    try {
      const { result } = await asBroker.withCheck(
        { grantId: options.grantId, tool: tool.name, args, subjectToken: options.subjectToken, ...(approvalId ? { approvalId } : {}) },
        () => options.connector.call(tool, args),
      );
      approvals.delete(key);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: { result } };
    } catch (error) {
      if (error instanceof ApprovalRequired) {
        // Bounded: the oldest remembered approval goes first (it expires within APPROVAL_TTL_MS anyway).
        if (approvals.size >= MAX_REMEMBERED_APPROVALS) approvals.delete(approvals.keys().next().value!);
        approvals.set(key, error.approvalId);
        return refusal(
          `This call needs a human's approval (approval ${error.approvalId}, until ${error.expiresAt}). ` +
            'Ask a person to approve it, then call this tool again with exactly the same arguments.',
          { reason: 'approval_required', approvalId: error.approvalId },
        );
      }
      if (error instanceof CallDenied) {
        // An approval that was used, expired, refused or does not match is spent: ask afresh next time.
        if (error.reason.startsWith('approval_') && error.reason !== 'approval_pending') approvals.delete(key);
        return refusal(denialText(error), {
          reason: error.reason,
          ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
          // The rule, the level of the chain and what would unlock the call: for the model and the human.
          ...(error.explanation ? { explanation: error.explanation } : {}),
        });
      }
      if (error instanceof UnsendableCall) return refusal(`The call was allowed but ${error.message}.`, { reason: 'invalid_arguments' });
      if (error instanceof ConnectorError) return refusal(`The call was allowed but ${error.message}.`, { reason: 'connector_error' });
      if (error instanceof ApiProblem && error.status < 500)
        return refusal(`The grant broker refused the call: ${error.code}.`, { reason: error.code });
      // Fail closed: with no answer from the grant broker, no call is made.
      return refusal('The grant broker could not be reached; the call was not made. Try again later.', { reason: 'broker_unavailable' });
    }
  });
  return server;
}

const MAX_REMEMBERED_APPROVALS = 1000;

/** What to show a model: the tools of an active grant, and writes only when its mode allows them at all. */
function allowsListing(grant: Grant, tool: string, access: 'read' | 'write'): boolean {
  return grant.status === 'active' && grant.tools.includes(tool) && (access === 'read' || grant.writeMode !== 'read');
}

function denialText(denied: CallDenied): string {
  switch (denied.reason) {
    case 'budget_exhausted':
      return `Denied: this grant's call budget is used up. Retry after ${Math.ceil((denied.retryAfterMs ?? 0) / 1000)} s.`;
    case 'resource_not_allowed':
      return 'Denied: this grant does not cover that repository, ref or path.';
    case 'tool_not_allowed':
      return 'Denied: this grant does not include that tool.';
    default:
      return `Denied by the grant broker: ${denied.reason}${denied.orgMessage ? ` (${denied.orgMessage})` : ''}.`;
  }
}

const refusal = (text: string, detail: Record<string, unknown> = {}): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text }],
  structuredContent: detail,
});
