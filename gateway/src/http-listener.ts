import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AgentAuthenticator, runtimeTokens, sessionOwner, type Bearer, type Refusal } from './agent-auth';
import { openAgentSession, type GatewayCore, type SessionHandlers } from './agent-session';
import { allowedHostsOf, hostnameOf } from './allowed-hosts';
import { answerHot } from './hot-path';
import { SessionTable } from './session-table';

export interface ListenOptions {
  port: number;
  host: string;
  /** The URL agents reach the gateway at (behind a proxy, say): its host is always an allowed Host. */
  publicUrl?: string;
  /** The Host and Origin names it answers to; by default the listen address's (every loopback name on loopback). */
  allowedHosts?: string[];
  /** How long a verified token+grant is trusted before it is asked again (each check verifies it anyway). */
  authRememberMs?: number;
  /** Live MCP sessions at most (each one agent on one grant); a new one displaces the largest holder's oldest. */
  maxSessions?: number;
  /** Live sessions of one agent at most; its new one closes its least recently used. */
  maxSessionsPerAgent?: number;
  /** Live sessions on one grant tree (a root grant and every grant below it) at most. */
  maxSessionsPerGrantTree?: number;
  /** A session not used for this long is closed. */
  sessionIdleMs?: number;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  handlers: SessionHandlers;
}

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The gateway for agents over streamable HTTP: `POST /mcp` (and the `GET`/`DELETE` of a session)
 * with the agent's runtime token as `Authorization: Bearer` and its grant as `Grant-Id`. The token
 * is verified with the grant broker before a byte of the body is read: anything but an agent's
 * token (a person's JWT included) is a 401. Each agent on each grant gets one MCP session of its
 * own, bound to its token and grant: a session id presented with another token or grant is a 404,
 * as is an unknown one. Sessions are bounded per agent and per grant tree (./session-table.ts).
 * A Host or Origin outside the allowed names is a 403 (a web page rebinding its name to the
 * gateway's address cannot drive it).
 */
export class HttpListener {
  private readonly http: HttpServer;
  private readonly sessions: SessionTable<Session>;
  private readonly authenticator: AgentAuthenticator;
  private readonly allowedHosts: ReadonlySet<string>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly core: GatewayCore,
    private readonly options: ListenOptions,
  ) {
    // The kinds of bearer accepted: an agent's runtime token (CONTRACT §20's access tokens go here too).
    this.authenticator = new AgentAuthenticator([runtimeTokens(core.brokerUrl, core.fetch)], {
      rememberMs: options.authRememberMs ?? 5_000,
      maxRemembered: 10_000,
    });
    this.allowedHosts = allowedHostsOf(options);
    const idleMs = options.sessionIdleMs ?? 30 * 60_000;
    this.sessions = new SessionTable({
      maxSessions: options.maxSessions ?? 1_000,
      maxSessionsPerAgent: options.maxSessionsPerAgent ?? 32,
      maxSessionsPerGrantTree: options.maxSessionsPerGrantTree ?? 64,
      idleMs,
    });
    this.http = createServer((request, response) => {
      this.handle(request, response).catch(() => {
        if (!response.headersSent) problem(response, 500, 'internal', 'the gateway failed to handle the request');
        else response.destroy();
      });
    });
    this.sweeper = setInterval(() => this.sessions.closeIdle(), Math.min(60_000, idleMs)).unref();
  }

  /** Live sessions: all of them, or one agent's. */
  sessionCount(agentId?: string): number {
    return agentId === undefined ? this.sessions.size : this.sessions.countOf(agentId);
  }

  /** Where agents reach it, once listening: `http://host:port/mcp`. */
  url(): string {
    const { address, port, family } = this.http.address() as AddressInfo;
    return `http://${family === 'IPv6' ? `[${address}]` : address}:${port}/mcp`;
  }

  listen(): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.options.port, this.options.host, () => resolve(this.http.address() as AddressInfo));
    });
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.sessions.closeAll();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/mcp') return problem(response, 404, 'not_found', 'the MCP endpoint is /mcp');
    if (!['POST', 'GET', 'DELETE'].includes(request.method ?? ''))
      return problem(response, 405, 'method_not_allowed', 'POST, GET or DELETE');
    if (!this.hostAllowed(request))
      return problem(response, 403, 'host_not_allowed', 'this gateway answers only to the Host and Origin names it is configured for');

    const token = /^Bearer ([\x21-\x7e]{1,8192})$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token) return unauthorized(response, 'send the agent\'s runtime token as "Authorization: Bearer <token>"');
    const grantHeader = request.headers['grant-id'];
    const identified = await this.authenticator.identify(token, typeof grantHeader === 'string' ? grantHeader : undefined);
    if (!identified.ok) return refuse(response, identified.refusal);
    const { bearer } = identified;

    const owner = sessionOwner(token, bearer.grantId);
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = this.sessions.get(sessionId);
      // Someone else's session is as unknown as one that never was.
      if (!session || session.owner !== owner) return jsonRpcError(response, 404, 'Session not found');
      response.once('close', this.sessions.use(sessionId));
      // Its tools/call and tools/list straight over Node's HTTP (./hot-path.ts); the rest through the SDK's transport.
      const declined = await answerHot(request, response, sessionId, session.value.handlers, MAX_BODY_BYTES);
      if (declined) return session.value.transport.handleRequest(request, response, declined.parsedBody);
      return;
    }
    if (request.method !== 'POST') return jsonRpcError(response, 400, 'Bad Request: Mcp-Session-Id header is required');
    return this.openSession(owner, bearer, token, request, response);
  }

  private async openSession(owner: string, bearer: Bearer, token: string, request: IncomingMessage, response: ServerResponse) {
    const { server, handlers } = openAgentSession(this.core, { grantId: bearer.grantId, agentToken: token });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_BODY_BYTES,
      // Admitted at once, within the initialize: whatever it displaces is closed first (./session-table.ts).
      onsessioninitialized: (id) => {
        const { agentId, rootId } = bearer;
        this.sessions.admit({ id, owner, agentId, rootId, value: { transport, server, handlers }, close: () => server.close() });
      },
      onsessionclosed: (id) => void this.sessions.end(id),
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
    // Not an initialize (the transport answered 400): nothing of it is kept.
    if (!transport.sessionId || !this.sessions.get(transport.sessionId)) await server.close();
  }

  private hostAllowed(request: IncomingMessage): boolean {
    const host = hostnameOf(`http://${request.headers.host ?? ''}`);
    if (!host || !this.allowedHosts.has(host)) return false;
    const origin = request.headers.origin;
    return origin === undefined || this.allowedHosts.has(hostnameOf(origin) ?? '');
  }
}

function refuse(response: ServerResponse, refusal: Refusal): void {
  if (refusal === 'bad_token') return unauthorized(response, "the grant broker does not accept this token as an agent's");
  if (refusal === 'grant_required') return problem(response, 400, 'grant_id_required', 'send the grant as header Grant-Id');
  if (refusal === 'grant_not_found') return problem(response, 404, 'not_found', 'no grant of that id that this token may use');
  return problem(response, 503, 'broker_unavailable', 'the grant broker could not be reached');
}

function unauthorized(response: ServerResponse, detail: string): void {
  response.setHeader('WWW-Authenticate', 'Bearer');
  problem(response, 401, 'unauthorized', detail);
}

function problem(response: ServerResponse, status: number, code: string, detail: string): void {
  // The body is never read before this answer: close the connection rather than drain it.
  if (status >= 400) response.setHeader('Connection', 'close');
  response.writeHead(status, { 'Content-Type': 'application/problem+json' });
  response.end(JSON.stringify({ type: 'about:blank', title: code, status, code, detail }));
}

function jsonRpcError(response: ServerResponse, status: number, message: string): void {
  response.setHeader('Connection', 'close');
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}
