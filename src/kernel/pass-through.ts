/**
 * A route that takes every method and path under a prefix and sees the request as it came: the
 * method, the path with its query, every header and the body's bytes. For protocols whose request
 * is someone else's request forwarded (Envoy's external authorization in HTTP mode), which no
 * JSON schema describes. src/http mounts it ahead of the router and documents it.
 */
export interface ForwardedHttpRequest {
  method: string;
  /** The path after the prefix (starting with `/`), query included. */
  path: string;
  /** Header names in lower case; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The body as UTF-8 text; '' when none was sent. */
  body: string;
}

export interface ForwardedHttpAnswer {
  status: number;
  headers: Record<string, string>;
  /** A JSON body (sent as `application/problem+json` when status is not 2xx). */
  body?: unknown;
}

export interface PassThroughRoute {
  /** `/ext-authz`: every path below it (and it) is this route's. */
  prefix: string;
  /** A body past this many bytes is answered 413 before the handler runs. */
  maxBodyBytes: number;
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  /** Documented answers by status (the OpenAPI document). */
  responses: Record<number, string>;
  handle(request: ForwardedHttpRequest): Promise<ForwardedHttpAnswer>;
}
