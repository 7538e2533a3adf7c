import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ErrorCode,
  JSONRPCMessageSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { exchange, type HttpSession } from './http-call';
import { upstreamFetch } from './http-fetch';
import { MAX_ANSWER_BYTES, UpstreamFailure, type Upstream } from './upstream';

export type McpServerAddress =
  { command: string; args?: string[]; env?: Record<string, string> } | { url: string; headers?: Record<string, string> };

/**
 * An MCP server as the upstream, reached with the SDK's own client over stdio (the gateway starts
 * it as a child process) or streamable HTTP. One connection serves every agent session. When it
 * closes (the process died, the server went away) the next call connects afresh; the call that was
 * in flight fails with `upstream_closed` rather than waiting.
 */
export class McpUpstream implements Upstream {
  private connection?: Promise<Client>;
  private current?: Client;
  private tools?: Promise<Tool[]>;
  private readonly listeners: (() => void)[] = [];
  private closed = false;
  /** An HTTP upstream's POSTs on a kept-alive pool (./http-fetch.ts). */
  private readonly http?: ReturnType<typeof upstreamFetch>;
  /** Over HTTP, the session the SDK's client opened, which tool calls are sent on directly (./http-call.ts). */
  private session?: HttpSession;
  /** The listed tools' output schemas, compiled once: a call's structured content is checked against its tool's. */
  private outputValidators = new Map<string, JsonSchemaValidator<unknown>>();
  private readonly ajv = new AjvJsonSchemaValidator();
  private nextId = 0;

  constructor(
    private readonly address: McpServerAddress,
    private readonly callTimeoutMs: number,
  ) {
    if ('url' in address) this.http = upstreamFetch();
  }

  async listTools(): Promise<Tool[]> {
    this.tools ??= this.fetchTools().catch((error: unknown) => {
      this.tools = undefined;
      throw error;
    });
    return this.tools;
  }

  async callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const client = await this.connected();
    if (this.http && this.session && this.current === client) return this.callDirectly(client, this.session, name, args);
    try {
      return (await client.callTool({ name, arguments: args }, undefined, { timeout: this.callTimeoutMs })) as CallToolResult;
    } catch (error) {
      throw failureOf(error, this.callTimeoutMs);
    }
  }

  onToolsChanged(listener: () => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    const client = await connection?.catch(() => undefined);
    if (!client) return this.http?.close();
    // The SDK gives a stdio child 2 s to leave once its stdin closes, then SIGTERM and 2 s more: a
    // gateway whose host is gone must not wait that long (./host-lifetime.ts), so it is signalled now.
    const pid = client.transport instanceof StdioClientTransport ? client.transport.pid : null;
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
    await client.close();
    // After the client: its close aborts what it still has in flight, which the pool would otherwise wait for.
    await this.http?.close();
  }

  private async fetchTools(): Promise<Tool[]> {
    const client = await this.connected();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    // Bounded: an upstream that pages for ever must not hold a listing open for ever.
    for (let page = 0; page < 100; page++) {
      let answer;
      try {
        answer = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.callTimeoutMs });
      } catch (error) {
        throw failureOf(error, this.callTimeoutMs);
      }
      tools.push(...answer.tools);
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    this.outputValidators = outputValidators(this.ajv, tools);
    return tools;
  }

  /**
   * A tool call over HTTP without the SDK's request machinery: the SDK's client turns the answer
   * into a web Response, reads it as JSON, checks it as a JSON-RPC message with zod, routes it
   * through its protocol layer (a timer and an abort listener per request), then checks the result
   * with zod again. Here the answer is read once (./http-call.ts) and the result checked once, with
   * the SDK's own schema and, when the tool declares one, its output schema: what the SDK's client
   * would refuse is refused, with the same failure codes. The session (its id, its protocol
   * version) stays the SDK client's, as does everything else the upstream sends it.
   */
  private async callDirectly(client: Client, session: HttpSession, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    // Ids of their own, never the SDK client's numbers, so the two never answer each other's requests.
    const id = `gateway-${(this.nextId += 1)}`;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.callTimeoutMs);
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    let response: Record<string, unknown>;
    try {
      response = await exchange(this.http!.pool, session, id, body, deadline.signal, (message) => handOver(client, message));
    } catch (error) {
      if (!deadline.signal.aborted) throw failureOf(error, this.callTimeoutMs);
      // As the SDK's client does at its timeout: the upstream is told the request is cancelled.
      void client
        .notification({ method: 'notifications/cancelled', params: { requestId: id, reason: 'timed out' } })
        .catch(() => undefined);
      throw new UpstreamFailure('upstream_timeout', `the upstream did not answer within ${this.callTimeoutMs} ms`);
    } finally {
      clearTimeout(timer);
    }
    if ('error' in response) {
      const code = (response.error as { code?: unknown } | null)?.code;
      throw new UpstreamFailure('upstream_error', `the upstream answered an error (${typeof code === 'number' ? code : 'unknown'})`);
    }
    const parsed = CallToolResultSchema.safeParse(response.result);
    if (!parsed.success) throw new UpstreamFailure('upstream_invalid_answer', "the upstream's answer was not a tool result");
    checkOutput(this.outputValidators.get(name), parsed.data);
    return parsed.data;
  }

  private connected(): Promise<Client> {
    if (this.closed) return Promise.reject(new UpstreamFailure('upstream_closed', 'the gateway is closing'));
    this.connection ??= this.connect().catch((error: unknown) => {
      this.connection = undefined;
      throw new UpstreamFailure('upstream_unavailable', `the upstream MCP server could not be reached: ${messageOf(error)}`);
    });
    return this.connection;
  }

  private async connect(): Promise<Client> {
    const client = new Client({ name: 'mcp-gateway', version: '0.1.0' }, { capabilities: {} });
    client.onclose = () => {
      // This connection is over: the next call starts another (and lists the tools again).
      if (this.current !== client) return;
      this.current = undefined;
      this.connection = undefined;
      this.toolsChanged();
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.toolsChanged());
    const transport = this.transport();
    await client.connect(transport, { timeout: this.callTimeoutMs });
    this.current = client;
    this.session = transport instanceof StreamableHTTPClientTransport ? httpSession(this.address, transport) : undefined;
    return client;
  }

  private transport(): Transport {
    if ('command' in this.address) {
      // The child gets a minimal environment (PATH, HOME, …) and what the config names: never the
      // gateway's own, which holds its broker token.
      return new StdioClientTransport({
        command: this.address.command,
        args: this.address.args ?? [],
        env: { ...getDefaultEnvironment(), ...this.address.env },
        stderr: 'inherit',
        maxBufferSize: MAX_ANSWER_BYTES,
      });
    }
    return new StreamableHTTPClientTransport(new URL(this.address.url), {
      requestInit: { headers: this.address.headers ?? {} },
      fetch: this.http?.fetch,
    });
  }

  private toolsChanged(): void {
    this.tools = undefined;
    for (const listener of this.listeners) listener();
  }
}

/** Where and how the SDK's transport sends this session's POSTs (its `_commonHeaders`, with no auth provider). */
function httpSession(address: McpServerAddress, transport: StreamableHTTPClientTransport): HttpSession | undefined {
  if (!('url' in address)) return undefined;
  const headers: Record<string, string> = {};
  new Headers(address.headers ?? {}).forEach((value, name) => (headers[name] = value));
  if (transport.sessionId) headers['mcp-session-id'] = transport.sessionId;
  if (transport.protocolVersion) headers['mcp-protocol-version'] = transport.protocolVersion;
  headers['content-type'] = 'application/json';
  headers.accept = 'application/json, text/event-stream';
  return { url: new URL(address.url), headers };
}

/**
 * A message of the call's stream that is not its response (a notification, a ping), handed to the
 * SDK's client as its transport would: checked as a JSON-RPC message first, skipped if it is not one.
 */
function handOver(client: Client, message: Record<string, unknown>): void {
  const checked = JSONRPCMessageSchema.safeParse(message);
  if (checked.success) client.transport?.onmessage?.(checked.data);
}

function outputValidators(ajv: AjvJsonSchemaValidator, tools: Tool[]): Map<string, JsonSchemaValidator<unknown>> {
  const validators = new Map<string, JsonSchemaValidator<unknown>>();
  for (const tool of tools) if (tool.outputSchema) validators.set(tool.name, ajv.getValidator(tool.outputSchema as JsonSchemaType));
  return validators;
}

/** The SDK client's own rule: a tool with an output schema returns structured content that fits it (unless it is an error). */
function checkOutput(validator: JsonSchemaValidator<unknown> | undefined, result: CallToolResult): void {
  if (!validator) return;
  if (!result.structuredContent && !result.isError)
    throw new UpstreamFailure('upstream_error', `the upstream answered an error (${ErrorCode.InvalidRequest})`);
  if (result.structuredContent && !validator(result.structuredContent).valid)
    throw new UpstreamFailure('upstream_error', `the upstream answered an error (${ErrorCode.InvalidParams})`);
}

function failureOf(error: unknown, timeoutMs: number): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  if (error instanceof McpError) {
    if (error.code === (ErrorCode.RequestTimeout as number))
      return new UpstreamFailure('upstream_timeout', `the upstream did not answer within ${timeoutMs} ms`);
    if (error.code === (ErrorCode.ConnectionClosed as number))
      return new UpstreamFailure('upstream_closed', 'the upstream closed the connection during the call');
    // A protocol error the upstream sent back (unknown tool, invalid params…): its own words, which
    // name no argument values the gateway would add.
    return new UpstreamFailure('upstream_error', `the upstream answered an error (${error.code})`);
  }
  // The SDK's schema check of the answer, or a transport failure.
  // zod's error (the SDK's check of the answer's shape) carries `issues`; its text is not repeated.
  if (error instanceof Error && Array.isArray((error as { issues?: unknown }).issues))
    return new UpstreamFailure('upstream_invalid_answer', "the upstream's answer was not a tool result");
  return new UpstreamFailure('upstream_error', `the upstream call failed: ${messageOf(error)}`);
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 300);
