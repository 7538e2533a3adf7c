import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { accessTokens } from './access-tokens';
import { AgentAuthenticator, runtimeTokens, sessionOwner, type Bearer, type Refusal } from './agent-auth';
import { openAgentSession, GRANT_ENDED, type GatewayCore, type SessionHandlers } from './agent-session';
import { allowedHostsOf, hostnameOf } from './allowed-hosts';
import { answerInstead } from './answer-instead';
import { AuthorizationServerDiscovery } from './authorization-server';
import { answerHot, answerHotParsed, type HotAuth } from './hot-path';
import { readMcpBody } from './mcp-body';
import { ProtectedResource } from './protected-resource';
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

/** What the listener verified of a request, for whichever path answers it. */
type Credential = HotAuth & { auth: AuthInfo };

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The gateway for agents over streamable HTTP: `POST /mcp` (and the `GET`/`DELETE` of a session)
 * with either the agent's runtime token as `Authorization: Bearer` and its grant as `Grant-Id`, or
 * an MCP host's OAuth access token (CONTRACT §20: the gateway is an OAuth protected resource, its
 * metadata under `/.well-known/oauth-protected-resource`). The token is verified before a byte of
 * the body is read: anything else (a person's JWT included) is a 401 whose `WWW-Authenticate`
 * points to the metadata. Each agent on each grant gets MCP sessions of its own: one opened with a
 * runtime token is bound to that token and grant, one opened over OAuth to the token's agent and
 * grant (the host's next token, after a refresh, keeps it); a session id presented by anyone else
 * is a 404, as is an unknown one. Sessions are bounded per agent and per grant tree
 * (./session-table.ts). A Host or Origin outside the allowed names is a 403 (a web page rebinding
 * its name to the gateway's address cannot drive it). A body whose `Mcp-Method` or `Mcp-Name`
 * header disagrees with it is a 400 (./mcp-body.ts).
 */
export class HttpListener {
  private readonly http: HttpServer;
  private readonly sessions: SessionTable<Session>;
  private readonly authenticator: AgentAuthenticator;
  private readonly allowedHosts: ReadonlySet<string>;
  private readonly sweeper: NodeJS.Timeout;
  private readonly protectedResource: ProtectedResource;
  private readonly authorizationServer: AuthorizationServerDiscovery;

  constructor(
    private readonly core: GatewayCore,
    private readonly options: ListenOptions,
  ) {
    this.protectedResource = new ProtectedResource(() => options.publicUrl ?? this.url());
    this.authorizationServer = new AuthorizationServerDiscovery(core.brokerUrl, core.fetch);
    // The kinds of bearer accepted: an agent's runtime token, and an MCP host's access token.
    const hostTokens = accessTokens({
      brokerUrl: core.brokerUrl,
      fetch: core.fetch,
      resource: () => this.protectedResource.resource(),
      authorizationServer: () => this.authorizationServer.current(),
    });
    this.authenticator = new AgentAuthenticator([runtimeTokens(core.brokerUrl, core.fetch), hostTokens], {
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

  /** Listens, once the grant broker's authorization server has been asked for (found or not: hosts' tokens wait for it). */
  async listen(): Promise<AddressInfo> {
    await this.authorizationServer.start();
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.options.port, this.options.host, () => resolve(this.http.address() as AddressInfo));
    });
  }

  /** The gateway's resource URI, as hosts' tokens must name it in `aud`. */
  resource(): string {
    return this.protectedResource.resource();
  }

  async close(): Promise<void> {
    this.authorizationServer.stop();
    clearInterval(this.sweeper);
    await this.sessions.closeAll();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '').split('?')[0] ?? '';
    if (this.protectedResource.isMetadataPath(path)) return this.serveMetadata(request, response);
    if (path !== '/mcp') return problem(response, 404, 'not_found', 'the MCP endpoint is /mcp');
    if (!['POST', 'GET', 'DELETE'].includes(request.method ?? ''))
      return problem(response, 405, 'method_not_allowed', 'POST, GET or DELETE');
    if (!this.hostAllowed(request))
      return problem(response, 403, 'host_not_allowed', 'this gateway answers only to the Host and Origin names it is configured for');

    const token = /^Bearer ([\x21-\x7e]{1,8192})$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token)
      return this.unauthorized(response, false, 'send an access token, or the agent\'s runtime token, as "Authorization: Bearer <token>"');
    const grantHeader = typeof request.headers['grant-id'] === 'string' ? request.headers['grant-id'] : undefined;
    const identified = await this.authenticator.identify(token, grantHeader);
    if (!identified.ok) return this.refuse(response, identified.refusal);
    const { bearer } = identified;

    // Over OAuth the session is the agent's on the grant, whichever of its host's tokens comes next.
    const owner = bearer.oauth ? `oauth\u0000${bearer.agentId}\u0000${bearer.grantId}` : sessionOwner(token, bearer.grantId);
    const sessionId = request.headers['mcp-session-id'];
    const session = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
    // Someone else's session is as unknown as one that never was.
    if (typeof sessionId === 'string' && (!session || session.owner !== owner)) return jsonRpcError(response, 404, 'Session not found');
    if (!session && request.method !== 'POST') return jsonRpcError(response, 400, 'Bad Request: Mcp-Session-Id header is required');
    const mcpHeaders = request.headers['mcp-method'] !== undefined || request.headers['mcp-name'] !== undefined;
    const credential = this.credentialOf(response, token, grantHeader, bearer);
    if (session) response.once('close', this.sessions.use(sessionId as string));
    // A runtime token's request without Mcp-Method or Mcp-Name headers: the hot path reads the body
    // itself, answering one it cannot take as the SDK's transport would. The others' bodies are read below.
    if (session && !bearer.oauth && !mcpHeaders) {
      const declined = await answerHot(request, response, sessionId as string, session.value.handlers, MAX_BODY_BYTES, credential);
      if (declined) return this.throughTransport(session.value.transport, request, response, credential, declined.parsedBody);
      return;
    }

    let body: unknown;
    if (request.method === 'POST') {
      const read = await readMcpBody(request, MAX_BODY_BYTES);
      if (!read.ok && read.code === 'parse_error') return jsonRpcError(response, 400, 'Parse error: the body is not JSON', -32700);
      if (!read.ok) return problem(response, read.status, read.code, read.detail);
      body = read.message;
    }
    if (session) {
      // tools/call and tools/list straight over Node's HTTP (./hot-path.ts); the rest through the SDK's transport.
      const declined =
        request.method === 'POST'
          ? await answerHotParsed(request, response, sessionId as string, session.value.handlers, body, credential)
          : {};
      if (declined) return this.throughTransport(session.value.transport, request, response, credential, body);
      return;
    }
    this.throughSdk(request, response, credential);
    return this.openSession(owner, bearer, token, request, response, body);
  }

  /**
   * The request's own token, for the session's handlers (an OAuth session's token changes as its
   * host refreshes it). Over OAuth, a check that finds the token's grant ended (revoked or
   * expired, on any replica) turns this very answer into the 401 the host's token now deserves
   * (`instead`), and the token is identified afresh at its next request (which the grant broker
   * then refuses). Whichever path answers (./hot-path.ts or the SDK's transport) takes both.
   */
  private credentialOf(response: ServerResponse, token: string, grantHeader: string | undefined, bearer: Bearer): Credential {
    const auth: AuthInfo = {
      token,
      clientId: '',
      scopes: [],
      ...(bearer.expiresAtMs ? { expiresAt: Math.floor(bearer.expiresAtMs / 1000) } : {}),
    };
    if (!bearer.oauth) return { auth };
    let ended = false;
    auth.extra = {
      [GRANT_ENDED]: () => {
        ended = true;
        this.authenticator.forget(token, grantHeader);
      },
    };
    const instead = () =>
      ended ? () => this.unauthorized(response, true, 'the grant this token was issued for has been revoked or has expired') : undefined;
    return { auth, instead };
  }

  /** Hands the credential to the SDK's transport: as its `authInfo`, and the answer it may replace. */
  private throughSdk(request: IncomingMessage, response: ServerResponse, { auth, instead }: Credential): void {
    (request as IncomingMessage & { auth?: AuthInfo }).auth = auth;
    if (instead) answerInstead(response, instead);
  }

  private throughTransport(
    transport: StreamableHTTPServerTransport,
    request: IncomingMessage,
    response: ServerResponse,
    credential: Credential,
    body: unknown,
  ): Promise<void> {
    this.throughSdk(request, response, credential);
    return transport.handleRequest(request, response, body);
  }

  private async openSession(
    owner: string,
    bearer: Bearer,
    token: string,
    request: IncomingMessage,
    response: ServerResponse,
    body: unknown,
  ) {
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
    await transport.handleRequest(request, response, body);
    // Not an initialize (the transport answered 400): nothing of it is kept.
    if (!transport.sessionId || !this.sessions.get(transport.sessionId)) await server.close();
  }

  /**
   * The protected resource metadata (RFC 9728), to anyone whose Host is allowed, from any origin
   * (a browser-based host reads it across origins). Until the authorization server is known: 503.
   */
  private serveMetadata(request: IncomingMessage, response: ServerResponse): void {
    if (request.method !== 'GET' && request.method !== 'HEAD') return problem(response, 405, 'method_not_allowed', 'GET');
    if (!this.hostAllowed(request, false))
      return problem(response, 403, 'host_not_allowed', 'this gateway answers only to the Host names it is configured for');
    const server = this.authorizationServer.current();
    if (!server)
      return problem(response, 503, 'authorization_server_unavailable', "the grant broker's authorization server is not known yet");
    response.writeHead(200, { 'Content-Type': 'application/json', 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'max-age=300' });
    response.end(request.method === 'HEAD' ? undefined : JSON.stringify(this.protectedResource.metadata(server.issuer)));
  }

  private hostAllowed(request: IncomingMessage, checkOrigin = true): boolean {
    const host = hostnameOf(`http://${request.headers.host ?? ''}`);
    if (!host || !this.allowedHosts.has(host)) return false;
    const origin = request.headers.origin;
    return !checkOrigin || origin === undefined || this.allowedHosts.has(hostnameOf(origin) ?? '');
  }

  private refuse(response: ServerResponse, refusal: Refusal): void {
    if (refusal === 'bad_token')
      return this.unauthorized(response, true, "the token is not an access token for this gateway, nor an agent's runtime token");
    if (refusal === 'token_ended')
      return this.unauthorized(response, true, 'the grant this token was issued for has been revoked or has expired');
    if (refusal === 'grant_required') return problem(response, 400, 'grant_id_required', 'send the grant as header Grant-Id');
    if (refusal === 'grant_mismatch')
      return problem(response, 400, 'grant_mismatch', 'the access token was issued for another grant than Grant-Id names');
    if (refusal === 'grant_not_found') return problem(response, 404, 'not_found', 'no grant of that id that this token may use');
    if (refusal === 'authorization_server_unknown')
      return problem(response, 503, 'authorization_server_unavailable', "the grant broker's authorization server is not known yet");
    return problem(response, 503, 'broker_unavailable', 'the grant broker could not be reached');
  }

  /** A 401 that tells the host where to get a token (`resource_metadata`), and `invalid_token` when it sent one. */
  private unauthorized(response: ServerResponse, presented: boolean, detail: string): void {
    response.setHeader('WWW-Authenticate', this.protectedResource.challenge(presented));
    problem(response, 401, 'unauthorized', detail);
  }
}

function problem(response: ServerResponse, status: number, code: string, detail: string): void {
  // The body is never read before this answer: close the connection rather than drain it.
  if (status >= 400) response.setHeader('Connection', 'close');
  response.writeHead(status, { 'Content-Type': 'application/problem+json' });
  response.end(JSON.stringify({ type: 'about:blank', title: code, status, code, detail }));
}

function jsonRpcError(response: ServerResponse, status: number, message: string, code = -32000): void {
  response.setHeader('Connection', 'close');
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
