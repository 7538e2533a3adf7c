import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { IncomingHttpHeaders } from 'node:http';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type ListToolsRequest,
  type ListToolsResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { createClient, type Grant, type GrantBrokerClient } from '@grant-broker/client';
import { ApprovalsInBand } from './approvals-in-band';
import { checkedCall, type CallContext } from './checked-call';
import type { ToolMapping } from './config';
import type { GrantCache } from './grant-cache';
import { callerContext, inSpan } from './tracing';
import { refusal } from './refusals';
import { canonicalPaths } from './resource-paths';
import type { ToolCatalog } from './tool-catalog';
import { UpstreamFailure, type Upstream } from './upstream/upstream';

/** What every agent session of one gateway process shares. */
export interface GatewayCore {
  brokerUrl: string;
  /** The grant broker as this gateway (its `bkt_` token): checks and outcomes. */
  broker: GrantBrokerClient;
  upstream: Upstream;
  catalog: ToolCatalog;
  /** Each grant as its listing needs it, kept while its checks see the same version (./grant-cache.ts). */
  grants: GrantCache;
  fetch?: typeof fetch;
  /** The upstream's own root, for paths it takes absolute (./resource-paths.ts). */
  pathRoot?: string;
  /** Sends the outcomes still held to the grant broker (within a bound) and closes its sockets. */
  close(): Promise<void>;
}

export interface AgentIdentity {
  grantId: string;
  /** The agent's own bearer token: reads its grant, and is forwarded to every check as `subjectToken`. */
  agentToken: string;
}

/**
 * What one agent's session answers to its two methods, given the request and its HTTP headers (the
 * trace context): the MCP server below, and the hot path of the HTTP listener (./hot-path.ts), call these.
 */
export interface SessionHandlers {
  listTools(request: ListToolsRequest, headers?: IncomingHttpHeaders): Promise<ListToolsResult>;
  callTool(request: CallToolRequest, headers?: IncomingHttpHeaders): Promise<CallToolResult>;
}

/**
 * One agent's MCP session on one grant: an MCP server whose `tools/list` shows the mapped tools the
 * grant allows (read as the agent, kept while the grant's checks see it unchanged) and whose `tools/call` runs each
 * call through the check. Sessions share the upstream and the compiled schemas.
 */
export function createAgentSession(core: GatewayCore, identity: AgentIdentity): Server {
  return openAgentSession(core, identity).server;
}

/** The session's MCP server, and the handlers it answers with (which the HTTP listener's hot path calls too). */
export function openAgentSession(core: GatewayCore, identity: AgentIdentity): { server: Server; handlers: SessionHandlers } {
  const server = new Server({ name: 'mcp-gateway', version: '0.1.0' }, { capabilities: { tools: {} } });
  const handlers = sessionHandlers(core, identity, server);
  server.setRequestHandler(ListToolsRequestSchema, (request, extra) => handlers.listTools(request, extra.requestInfo?.headers));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => handlers.callTool(request, extra.requestInfo?.headers));
  return { server, handlers };
}

/** The handlers of one agent's session on one grant (see createAgentSession); `server` is the session's, which approvals asked in band talk through. */
function sessionHandlers(core: GatewayCore, identity: AgentIdentity, server: Server): SessionHandlers {
  const asAgent = createClient({ baseUrl: core.brokerUrl, token: identity.agentToken, fetch: core.fetch });
  const context: CallContext = {
    grantId: identity.grantId,
    agentToken: identity.agentToken,
    checked: (version) => core.grants.saw(identity.grantId, version),
    refused: () => core.grants.forget(identity.grantId),
  };
  const approvals = new ApprovalsInBand(server, core.broker);
  const listTools = async () => {
    const [grant, tools] = await Promise.all([
      // Read as the agent (the door verified it may), once per grant while its checks see no change.
      core.grants.grant(identity.grantId, () =>
        asAgent.unwrap(asAgent.api.GET('/api/grants/{grantId}', { params: { path: { grantId: identity.grantId } } })),
      ),
      core.catalog.tools(),
    ]);
    const listed: Tool[] = [];
    for (const { tool, mapping } of tools.values()) {
      if (!allowsListing(grant, mapping)) continue;
      listed.push(
        mapping.access === 'write' && grant.writeMode === 'approve'
          ? { ...tool, description: `${tool.description ?? ''} Each call waits for a human's approval.`.trim() }
          : tool,
      );
    }
    return { tools: listed };
  };

  const callTool = async (request: CallToolRequest): Promise<CallToolResult> => {
    let tool;
    try {
      tool = await core.catalog.tool(request.params.name);
    } catch (error) {
      const reason = error instanceof UpstreamFailure ? error.code : 'upstream_unavailable';
      return refusal('The upstream MCP server could not list its tools; the call was not made. Try again later.', { reason });
    }
    // Not in the config (or not offered by the upstream): never checked, never sent.
    if (!tool) return refusal(`There is no tool ${request.params.name} on this gateway.`, { reason: 'unknown_tool' });
    const args = canonicalPaths(request.params.arguments ?? {}, tool.mapping, core.pathRoot);
    // A call that waits for a person: a host that declared URL elicitation is asked in band to open its page.
    const denied = approvals.deniedApprovalOf(tool.name, args);
    return approvals.answer(await checkedCall(core.broker, core.upstream, tool, args, context, denied), tool.name, args);
  };
  return {
    listTools: (request, headers) =>
      inSpan('tools/list', callerContext(request.params?._meta, headers), { 'mcp.method.name': 'tools/list' }, () => listTools()),
    callTool: (request, headers) =>
      inSpan(
        `tools/call ${request.params.name}`,
        callerContext(request.params._meta, headers),
        { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': request.params.name, 'gen_ai.operation.name': 'execute_tool' },
        () => callTool(request),
        // A refusal's reason (or the upstream's own tool error) says how the call went.
        (result) => (result.isError ? (reasonOf(result) ?? 'tool_error') : undefined),
      ),
  };
}

/**
 * What a check would not refuse for this grant's tools and write mode now: the tool is one of the
 * grant's, the grant is active, and a write tool needs a write mode other than `read`. (Resources,
 * budgets and org rules depend on the call's arguments and time, so the check decides those.)
 */
function allowsListing(grant: Grant, mapping: ToolMapping): boolean {
  // A kept grant may have expired since it was read.
  const live = grant.status === 'active' && Date.parse(grant.expiresAt) > Date.now();
  return live && grant.tools.includes(mapping.grantTool) && (mapping.access === 'read' || grant.writeMode !== 'read');
}

/** The gateway's own refusal reason of a result (`structuredContent.reason`), if it has one. */
function reasonOf(result: CallToolResult): string | undefined {
  const reason = (result.structuredContent as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' ? reason : undefined;
}
