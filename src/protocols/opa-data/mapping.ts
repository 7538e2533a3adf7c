import type { CheckAnswer } from '../../broker/check';
import { ApiError } from '../../kernel/errors';

/**
 * OPA's REST data API ↔ the broker check, as pure functions: which input a caller sent (the
 * check's own body, or the request Kong's or APISIX's OPA plugin describes), that request as one
 * shape, and the check's answer as the document OPA would return. No rule is decided here.
 */

/** A gateway's request as the route map reads it (method, path with its query, headers, body). */
export interface ForwardedCall {
  method: string;
  /** The original path, query included. */
  path: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The body as text, when the gateway sends it. */
  body?: string;
}

export type InputOf =
  | { kind: 'check'; body: Record<string, unknown> }
  | { kind: 'gateway'; gateway: 'kong' | 'apisix'; call: ForwardedCall }
  | { kind: 'unknown' };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The header a gateway adds (before its OPA plugin runs) to carry the broker's own token. */
export const BROKER_HEADER = 'x-broker-authorization';

/**
 * What the input is: the check's body (it names a `grantId`), Kong's (`request.http`) or
 * APISIX's (`request` with `method` and `path`). Anything else is no input of ours.
 */
export function inputOf(input: unknown): InputOf {
  if (!isRecord(input)) return { kind: 'unknown' };
  if (Object.hasOwn(input, 'grantId')) return { kind: 'check', body: input };
  const request = input.request;
  if (!isRecord(request)) return { kind: 'unknown' };
  if (isRecord(request.http)) {
    const call = kongCall(request.http);
    return call ? { kind: 'gateway', gateway: 'kong', call } : { kind: 'unknown' };
  }
  const call = apisixCall(request);
  return call ? { kind: 'gateway', gateway: 'apisix', call } : { kind: 'unknown' };
}

/** Header values as one string each (a repeated header's values joined as HTTP joins them). */
function headersOf(raw: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!isRecord(raw)) return headers;
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'string') headers[name.toLowerCase()] = value;
    else if (Array.isArray(value) && value.every((item) => typeof item === 'string')) headers[name.toLowerCase()] = value.join(', ');
  }
  return headers;
}

/** A query object (`{a: "1", flag: true, many: ["x", "y"]}`) as a query string. */
function queryOf(raw: unknown): string {
  if (!isRecord(raw)) return '';
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(raw)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item === 'string' || typeof item === 'number') search.append(name, String(item));
      else if (item === true) search.append(name, '');
    }
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

function requestLine(method: unknown, path: unknown): { method: string; path: string } | undefined {
  if (typeof method !== 'string' || typeof path !== 'string' || !/^[A-Za-z]{1,16}$/.test(method) || !path.startsWith('/')) return undefined;
  // The query travels apart in both shapes; a path that carries one anyway keeps only its path.
  return { method: method.toUpperCase(), path: path.split('?')[0]! };
}

/**
 * Kong's OPA plugin: `input.request.http` with `method`, `path`, `querystring`, `headers`, and
 * with `include_parsed_json_body_in_opa_input` the JSON body as `parsed_body` (else, with
 * `include_body_in_opa_input`, the raw `body`).
 */
export function kongCall(http: Record<string, unknown>): ForwardedCall | undefined {
  const line = requestLine(http.method, http.path);
  if (!line) return undefined;
  const body = isRecord(http.parsed_body) ? JSON.stringify(http.parsed_body) : typeof http.body === 'string' ? http.body : undefined;
  return {
    ...line,
    path: line.path + queryOf(http.querystring),
    headers: headersOf(http.headers),
    ...(body !== undefined ? { body } : {}),
  };
}

/** APISIX's OPA plugin: `input.request` with `method`, `path`, `query` and `headers` (no body). */
export function apisixCall(request: Record<string, unknown>): ForwardedCall | undefined {
  const line = requestLine(request.method, request.path);
  if (!line) return undefined;
  return { ...line, path: line.path + queryOf(request.query), headers: headersOf(request.headers) };
}

/**
 * The document OPA would answer: `result` is the check's answer with `allow`, and what the
 * gateways' plugins read of it (`headers`, `status_code`): on allow, the headers for the upstream
 * (the call's id, and the minted credential when asked for); on a refusal, the status to answer
 * (429 with `retry-after` for a spent budget, else 403). `decision_id` is the call's id.
 */
export function documentOf(answer: CheckAnswer) {
  const allow = answer.decision === 'allow';
  const headers: Record<string, string> = { 'x-grant-call-id': answer.callId };
  if (allow && answer.credential) headers.authorization = `Bearer ${answer.credential.token}`;
  if (answer.retryAfterMs !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(answer.retryAfterMs / 1000)));
  const status = allow ? {} : { status_code: answer.reason === 'budget_exhausted' ? 429 : 403 };
  return { result: { allow, ...answer, headers, ...status }, decision_id: answer.callId };
}

/** A call the check refused without a record (or a gateway request with no call): `allow: false`, no decision id. */
export function refusedDocument(reason: string, status: number) {
  return { result: { allow: false, reason, status_code: status, headers: {} as Record<string, string> } };
}

/**
 * The check's refusals of the call itself, as OPA's answer (the gateway then refuses the
 * request); another broker's grant exactly as an unknown one. Anything else (a dependency down)
 * is the whole request's: never a document, so never an allow.
 */
const ANSWERED_REFUSALS: ReadonlySet<string> = new Set([
  'not_found',
  'subject_token_invalid',
  'subject_mismatch',
  'principal_assertion_refused',
  'credential_unavailable',
]);

export function refusalOf(error: unknown) {
  if (!(error instanceof ApiError) || !ANSWERED_REFUSALS.has(error.code)) return undefined;
  // A refusal of the call is 403 to the gateway's client, whatever status the plain check gives it.
  return refusedDocument(error.code, error.code === 'subject_token_invalid' ? 401 : 403);
}
