import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AgentAuthenticator, sessionOwner, type Verdict } from './agent-auth';
import { createAgentSession, type GatewayCore } from './agent-session';

export interface ListenOptions {
  port: number;
  host: string;
  /** How long a verified token+grant is trusted before it is asked again (each check verifies it anyway). */
  authRememberMs?: number;
  /** Live MCP sessions at most (each one agent on one grant); more answer 503 until one ends. */
  maxSessions?: number;
  /** A session not used for this long is closed. */
  sessionIdleMs?: number;
}

interface Session {
  owner: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastUsed: number;
}

const GRANT_ID = /^[A-Za-z0-9_]{1,100}$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * The gateway for agents over streamable HTTP: `POST /mcp` (and the `GET`/`DELETE` of a session)
 * with the agent's token as `Authorization: Bearer` and its grant as `Grant-Id`. The token is
 * verified with the grant broker before a byte of the body is read (401 otherwise). Each agent on
 * each grant gets one MCP session of its own, bound to its token and grant: a session id presented
 * with another token or grant is a 404, as is an unknown one. Listening on a loopback address, it
 * refuses a Host or Origin that is not loopback (a web page rebinding its name to 127.0.0.1).
 */
export class HttpListener {
  private readonly http: HttpServer;
  private readonly sessions = new Map<string, Session>();
  private readonly sessionByOwner = new Map<string, string>();
  private readonly authenticator: AgentAuthenticator;
  private readonly sweeper: NodeJS.Timeout;
  private readonly maxSessions: number;
  private readonly sessionIdleMs: number;

  constructor(
    private readonly core: GatewayCore,
    private readonly options: ListenOptions,
  ) {
    this.authenticator = new AgentAuthenticator(core.brokerUrl, {
      rememberMs: options.authRememberMs ?? 5_000,
      maxRemembered: 10_000,
      fetch: core.fetch,
    });
    this.maxSessions = options.maxSessions ?? 1_000;
    this.sessionIdleMs = options.sessionIdleMs ?? 30 * 60_000;
    this.http = createServer((request, response) => {
      this.handle(request, response).catch(() => {
        if (!response.headersSent) problem(response, 500, 'internal', 'the gateway failed to handle the request');
        else response.destroy();
      });
    });
    this.sweeper = setInterval(() => this.closeIdle(Date.now()), Math.min(60_000, this.sessionIdleMs)).unref();
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
    await Promise.all([...this.sessions.keys()].map((id) => this.endSession(id)));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/mcp') return problem(response, 404, 'not_found', 'the MCP endpoint is /mcp');
    if (!['POST', 'GET', 'DELETE'].includes(request.method ?? ''))
      return problem(response, 405, 'method_not_allowed', 'POST, GET or DELETE');
    if (!this.hostAllowed(request))
      return problem(response, 403, 'host_not_allowed', 'this gateway answers only to a loopback Host and Origin');

    const token = /^Bearer ([\x21-\x7e]{1,8192})$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token) return unauthorized(response, 'send the agent\'s token as "Authorization: Bearer <token>"');
    const grantId = request.headers['grant-id'];
    if (typeof grantId !== 'string' || !GRANT_ID.test(grantId))
      return problem(response, 400, 'grant_id_required', 'send the grant as header Grant-Id');
    const verdict = await this.authenticator.verify(token, grantId);
    if (verdict !== 'ok') return refuse(response, verdict);

    const owner = sessionOwner(token, grantId);
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = this.sessions.get(sessionId);
      // Someone else's session is as unknown as one that never was.
      if (!session || session.owner !== owner) return jsonRpcError(response, 404, 'Session not found');
      session.lastUsed = Date.now();
      return session.transport.handleRequest(request, response);
    }
    if (request.method !== 'POST') return jsonRpcError(response, 400, 'Bad Request: Mcp-Session-Id header is required');
    if (this.sessions.size >= this.maxSessions) this.closeIdle(Date.now());
    if (this.sessions.size >= this.maxSessions)
      return problem(response, 503, 'too_many_sessions', 'the gateway holds as many sessions as it may');
    return this.openSession(owner, grantId, token, request, response);
  }

  private async openSession(owner: string, grantId: string, token: string, request: IncomingMessage, response: ServerResponse) {
    const server = createAgentSession(this.core, { grantId, agentToken: token });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      enableJsonResponse: true,
      maxRequestBodySize: 1024 * 1024,
      onsessioninitialized: (id) => {
        // One session per agent and grant: a new initialize ends the previous one.
        const previous = this.sessionByOwner.get(owner);
        if (previous) void this.endSession(previous);
        this.sessions.set(id, { owner, transport, server, lastUsed: Date.now() });
        this.sessionByOwner.set(owner, id);
      },
      onsessionclosed: (id) => void this.endSession(id),
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
    // Not an initialize (the transport answered 400): nothing of it is kept.
    if (!transport.sessionId || !this.sessions.has(transport.sessionId)) await server.close();
  }

  private async endSession(id: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    if (this.sessionByOwner.get(session.owner) === id) this.sessionByOwner.delete(session.owner);
    await session.server.close().catch(() => undefined);
  }

  private closeIdle(now: number): void {
    for (const [id, session] of this.sessions) if (now - session.lastUsed > this.sessionIdleMs) void this.endSession(id);
  }

  private hostAllowed(request: IncomingMessage): boolean {
    if (!LOOPBACK_HOSTS.has(this.options.host)) return true;
    const host = hostnameOf(`http://${request.headers.host ?? ''}`);
    if (!host || !LOOPBACK_HOSTS.has(host)) return false;
    const origin = request.headers.origin;
    return origin === undefined || LOOPBACK_HOSTS.has(hostnameOf(origin) ?? '');
  }
}

function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

function refuse(response: ServerResponse, verdict: Exclude<Verdict, 'ok'>): void {
  if (verdict === 'bad_token') return unauthorized(response, 'the grant broker does not accept this token');
  if (verdict === 'grant_not_found') return problem(response, 404, 'not_found', 'no grant of that id that this token may use');
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
