import type { CheckAnswer } from '../../broker/check';
import { matchRoute, mcpMethodRoute, type RouteMap } from './route-map';

/**
 * Envoy external authorization, mapped both ways: a request Envoy forwards (HTTP service mode or
 * gRPC `CheckRequest`, read into one shape by each adapter) becomes the broker check's input, and
 * the check's answer becomes what Envoy does with the request. Pure: no I/O, no rule. Whether the
 * call is allowed is the check's alone; this only says which call it is.
 */

/** The original request as Envoy describes it. Header names are lower case. */
export interface ForwardedCall {
  method: string;
  /** The original path, query included. */
  path: string;
  headers: Record<string, string>;
  /** The body when Envoy forwards it (`with_request_body`), as text. */
  body?: string;
  /** Envoy's MCP filter metadata (`envoy.filters.http.mcp`), gRPC only: set by Envoy, never by the client. */
  mcp?: { method?: unknown; params?: unknown };
}

/** What the check is asked; `subjectToken` is the agent's own credential as the gateway received it. */
export interface MappedCheck {
  grantId: string;
  tool: string;
  args: Record<string, unknown>;
  subjectToken: string;
  credential: boolean;
  approvalId?: string;
}

export type Mapped =
  | { kind: 'check'; check: MappedCheck }
  /** An MCP message that carries no tool call: passes once the agent's credential verifies. */
  | { kind: 'pass'; subjectToken: string }
  | { kind: 'refuse'; status: number; reason: string; detail: string };

/** MCP methods that call no tool: they pass without a check (the agent's credential still verifies). */
const MCP_WITHOUT_TOOL_CALL = new Set(['initialize', 'ping', 'tools/list']);
export const GRANT_HEADER = 'grant-id';
export const APPROVAL_HEADER = 'x-grant-approval-id';
export const CALL_ID_HEADER = 'x-grant-call-id';

const refuse = (status: number, reason: string, detail: string): Mapped => ({ kind: 'refuse', status, reason, detail });

function bearerOf(header: string | undefined): string | undefined {
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header ?? '');
  return match?.[1];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON object body, absent, or a refusal for anything else. */
function jsonObjectBody(body: string | undefined): Record<string, unknown> | undefined | 'malformed' {
  if (body === undefined || body === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return isObject(parsed) ? parsed : 'malformed';
  } catch {
    return 'malformed';
  }
}

function queryArgs(search: string): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [name, value] of new URLSearchParams(search)) {
    const seen = args[name];
    args[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return args;
}

/** An MCP message (Envoy's metadata, or the JSON-RPC body of an `mcp: true` route) as a call. */
type McpCall =
  | { kind: 'refused'; refused: Mapped }
  | { kind: 'pass' }
  | { kind: 'call'; tool: string; args: Record<string, unknown>; credential: boolean };

function mcpCall(message: { method?: unknown; params?: unknown }, routes: RouteMap, credential: boolean): McpCall {
  const { method, params } = message;
  if (typeof method !== 'string') return { kind: 'refused', refused: refuse(400, 'invalid_request', 'the MCP message names no method') };
  if (MCP_WITHOUT_TOOL_CALL.has(method) || method.startsWith('notifications/')) return { kind: 'pass' };
  if (method === 'tools/call') {
    if (!isObject(params) || typeof params.name !== 'string') {
      return { kind: 'refused', refused: refuse(400, 'invalid_request', 'tools/call names no tool') };
    }
    const args = params.arguments ?? {};
    if (!isObject(args)) return { kind: 'refused', refused: refuse(400, 'invalid_request', 'tools/call arguments are not an object') };
    return { kind: 'call', tool: params.name, args, credential };
  }
  const route = mcpMethodRoute(routes, method);
  if (!route)
    return { kind: 'refused', refused: refuse(403, 'method_not_allowed', `the MCP method ${method} is not in the broker's routes`) };
  const args = params ?? {};
  if (!isObject(args)) return { kind: 'refused', refused: refuse(400, 'invalid_request', 'the MCP params are not an object') };
  return { kind: 'call', tool: route.tool, args, credential: route.credential === true };
}

/** The agent's bearer credential of a forwarded request. */
export const subjectTokenOf = (call: ForwardedCall) => bearerOf(call.headers.authorization);

/**
 * The forwarded request as the broker check's input, or what Envoy answers without one.
 * `tokenGrant`: the grant an MCP host's access token names (CONTRACT §20), which needs no
 * `grant-id` header; one that names another grant is refused (the check would refuse the token
 * for it anyway; this says why, and checks nothing).
 */
export function toCheck(call: ForwardedCall, routes: RouteMap, tokenGrant?: string): Mapped {
  const subjectToken = subjectTokenOf(call);
  if (!subjectToken) return refuse(401, 'unauthenticated', "send the agent's credential as Authorization: Bearer");
  const grantHeader = call.headers[GRANT_HEADER];
  if (tokenGrant !== undefined && grantHeader !== undefined && grantHeader !== tokenGrant) {
    return refuse(400, 'grant_mismatch', `the access token is for another grant than the ${GRANT_HEADER} header names`);
  }
  const [pathOnly = '', search = ''] = splitOnce(call.path, '?');
  const match = matchRoute(routes, call.method, pathOnly);
  if (match.kind === 'bad_path') return refuse(400, 'invalid_request', 'the path is not canonical (.., an encoded slash or NUL)');

  let tool: string;
  let args: Record<string, unknown>;
  let credential: boolean;
  if (call.mcp || (match.kind === 'route' && match.route.mcp)) {
    let message = call.mcp;
    if (!message) {
      const body = jsonObjectBody(call.body);
      if (body === undefined || body === 'malformed') return refuse(400, 'invalid_request', 'the MCP request carries no JSON-RPC message');
      message = body;
    }
    const mapped = mcpCall(message, routes, match.kind === 'route' && match.route.credential === true);
    if (mapped.kind === 'refused') return mapped.refused;
    if (mapped.kind === 'pass') return { kind: 'pass', subjectToken };
    ({ tool, args, credential } = mapped);
  } else {
    if (match.kind !== 'route' || match.route.tool === undefined) {
      return refuse(403, 'no_route', `no route of the broker maps ${call.method.toUpperCase()} ${pathOnly}`);
    }
    const body = jsonObjectBody(call.body);
    if (body === 'malformed') return refuse(400, 'invalid_request', 'the body is not a JSON object');
    tool = match.route.tool;
    args = { ...body, ...queryArgs(search), ...match.params };
    credential = match.route.credential === true;
  }

  const grantId = grantHeader ?? tokenGrant;
  if (!grantId) return refuse(403, 'grant_required', `send the grant as the ${GRANT_HEADER} header`);
  const approvalId = call.headers[APPROVAL_HEADER];
  return {
    kind: 'check',
    check: { grantId, tool, args, subjectToken, credential, ...(approvalId ? { approvalId } : {}) },
  };
}

function splitOnce(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + 1)];
}

/** What Envoy does with the request: let it through with these header changes, or answer it. */
export type Verdict =
  | { allow: true; callId?: string; setHeaders: Record<string, string>; removeHeaders: string[] }
  | { allow: false; status: number; callId?: string; headers: Record<string, string>; body: DenialBody };

/** An RFC 9457 problem document with the check's reason, explanation and call. */
export interface DenialBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  reason: string;
  callId?: string;
  approvalId?: string;
  approval?: { id: string; expiresAt: string };
  retryAfterMs?: number;
  explanation?: CheckAnswer['explanation'];
  message?: string;
}

export function denial(status: number, reason: string, detail: string, extra: Partial<DenialBody> = {}): Verdict {
  const headers: Record<string, string> = {};
  if (status === 401) headers['www-authenticate'] = 'Bearer realm="grant-broker"';
  if (extra.callId) headers[CALL_ID_HEADER] = extra.callId;
  if (extra.retryAfterMs !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(extra.retryAfterMs / 1000)));
  if (extra.approvalId) headers['x-grant-approval-id'] = extra.approvalId;
  return {
    allow: false,
    status,
    callId: extra.callId,
    headers,
    body: { type: 'about:blank', title: titleOf(reason), status, detail, code: reason, reason, ...extra },
  };
}

function titleOf(reason: string): string {
  if (reason === 'budget_exhausted') return 'The call budget is spent';
  if (reason === 'approval_required') return 'A human approval of this call is required';
  return 'The call is not allowed';
}

/**
 * The check's answer for Envoy. Allow: the agent's credential never goes upstream (removed, or
 * replaced by the call's minted credential). Deny: 403 with the reason and explanation; a spent
 * budget 429 with `retry-after`; approval required 403 naming the approval.
 */
export function fromAnswer(answer: CheckAnswer): Verdict {
  if (answer.decision === 'allow') {
    const setHeaders: Record<string, string> = { [CALL_ID_HEADER]: answer.callId };
    const removeHeaders = [GRANT_HEADER];
    if (answer.credential) setHeaders.authorization = `Bearer ${answer.credential.token}`;
    else removeHeaders.push('authorization');
    return { allow: true, callId: answer.callId, setHeaders, removeHeaders };
  }
  const common = {
    callId: answer.callId,
    ...(answer.explanation ? { explanation: answer.explanation } : {}),
    ...(answer.message ? { message: answer.message } : {}),
  };
  if (answer.decision === 'approval_required') {
    return denial(403, 'approval_required', 'a human must approve this exact call; send it again once approved', {
      ...common,
      approvalId: answer.approvalId,
      approval: answer.approval,
    });
  }
  if (answer.reason === 'budget_exhausted') {
    return denial(429, answer.reason, 'the grant chain has no calls left in its window', {
      ...common,
      retryAfterMs: answer.retryAfterMs ?? 1000,
    });
  }
  return denial(403, answer.reason, answer.message ?? `the call is denied: ${answer.reason}`, common);
}
