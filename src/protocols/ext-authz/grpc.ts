import { existsSync } from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Logger } from '../../kernel/log';
import { denial, type ForwardedCall, type Verdict } from './mapping';
import type { ExtAuthzService } from './service';

/**
 * Envoy external authorization over gRPC (`envoy.service.auth.v3.Authorization/Check`), read
 * with Envoy's own .proto files (proto/, vendored with their licences). The request becomes the
 * same ForwardedCall the HTTP mode makes; the verdict becomes a CheckResponse. Every refusal is a
 * CheckResponse with a non-OK status and a `denied_response` (never an RPC error a gateway could
 * be told to read as an allow); a dependency down is UNAVAILABLE with a 503.
 */

const MCP_NAMESPACE = 'envoy.filters.http.mcp';
/** A CheckRequest larger than this is refused by gRPC itself (RESOURCE_EXHAUSTED) before it is read. */
const MAX_MESSAGE_BYTES = 1024 * 1024;
/** As the broker check: a forwarded body larger than the contract's 64 KiB is refused (413). */
const MAX_BODY_BYTES = 64 * 1024;

const Code = grpc.status;

function protoDirectory(): string {
  // src/protocols/ext-authz under ts-jest, dist/src/protocols/ext-authz when built.
  const candidates = [path.join(__dirname, '..', '..', '..', 'proto'), path.join(__dirname, '..', '..', '..', '..', 'proto')];
  const found = candidates.find((dir) => existsSync(path.join(dir, 'envoy', 'service', 'auth', 'v3', 'external_auth.proto')));
  if (!found) throw new Error(`Envoy's .proto files are missing (looked in ${candidates.join(', ')})`);
  return found;
}

/** The Authorization service's definition, loaded once. */
export function authorizationService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync('envoy/service/auth/v3/external_auth.proto', {
    includeDirs: [protoDirectory()],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { auth: { v3: { Authorization: grpc.ServiceClientConstructor } } } };
  };
  return loaded.envoy.service.auth.v3.Authorization.service;
}

/** google.protobuf.Value, as proto-loader decodes it with `oneofs`, to plain JSON. */
interface ProtoValue {
  kind?: string;
  nullValue?: unknown;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: ProtoStruct;
  listValue?: { values?: ProtoValue[] };
}
interface ProtoStruct {
  fields?: Record<string, ProtoValue>;
}

/** Envoy's MCP metadata is a few levels deep; anything nested past this is refused as malformed. */
const MAX_STRUCT_DEPTH = 32;

function valueToJson(value: ProtoValue, depth: number): unknown {
  if (depth > MAX_STRUCT_DEPTH) throw new MalformedRequest('the metadata nests too deep');
  switch (value.kind) {
    case 'numberValue':
      return value.numberValue;
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'structValue':
      return structToJson(value.structValue ?? {}, depth + 1);
    case 'listValue':
      return (value.listValue?.values ?? []).map((item) => valueToJson(item, depth + 1));
    default:
      return null;
  }
}

function structToJson(struct: ProtoStruct, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(struct.fields ?? {})) {
    if (key === '__proto__') throw new MalformedRequest('the metadata holds a __proto__ key');
    out[key] = valueToJson(value, depth);
  }
  return out;
}

class MalformedRequest extends Error {}

interface HttpAttributes {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  header_map?: { headers?: Array<{ key?: string; value?: string; raw_value?: Buffer }> };
  body?: string;
  raw_body?: Buffer;
}

interface CheckRequestMessage {
  attributes?: {
    request?: { http?: HttpAttributes };
    metadata_context?: { filter_metadata?: Record<string, ProtoStruct> };
  };
}

/** The CheckRequest as the call the mapping reads, or a refusal of a request that is not one. */
export function forwardedCallOf(request: CheckRequestMessage): { call: ForwardedCall } | { refused: Verdict } {
  const http = request.attributes?.request?.http ?? {};
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(http.headers ?? {})) headers[name.toLowerCase()] = value;
  for (const entry of http.header_map?.headers ?? []) {
    if (!entry.key) continue;
    const value = entry.raw_value && entry.raw_value.length > 0 ? entry.raw_value.toString('utf8') : (entry.value ?? '');
    const name = entry.key.toLowerCase();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const body = http.raw_body && http.raw_body.length > 0 ? http.raw_body.toString('utf8') : http.body;
  if (body !== undefined && Buffer.byteLength(body) > MAX_BODY_BYTES)
    return { refused: denial(413, 'payload_too_large', 'the forwarded body is larger than 64 KiB') };
  const metadata = request.attributes?.metadata_context?.filter_metadata?.[MCP_NAMESPACE];
  let mcp: ForwardedCall['mcp'];
  if (metadata) {
    try {
      const json = structToJson(metadata);
      mcp = { method: json.method, params: json.params };
    } catch {
      return { refused: denial(400, 'invalid_request', "Envoy's MCP metadata is malformed") };
    }
  }
  return { call: { method: http.method ?? '', path: http.path ?? '', headers, ...(body ? { body } : {}), ...(mcp ? { mcp } : {}) } };
}

const headerOption = (key: string, value: string) => ({ header: { key, value }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' });

/** The verdict as Envoy's CheckResponse. */
export function checkResponseOf(verdict: Verdict) {
  if (verdict.allow) {
    return {
      status: { code: Code.OK, message: '' },
      ok_response: {
        headers: Object.entries(verdict.setHeaders).map(([key, value]) => headerOption(key, value)),
        headers_to_remove: verdict.removeHeaders,
      },
    };
  }
  const code = verdict.status === 401 ? Code.UNAUTHENTICATED : verdict.status >= 500 ? Code.UNAVAILABLE : Code.PERMISSION_DENIED;
  return {
    status: { code, message: verdict.body.reason },
    denied_response: {
      status: { code: verdict.status },
      headers: [
        ...Object.entries(verdict.headers).map(([key, value]) => headerOption(key, value)),
        headerOption('content-type', 'application/problem+json'),
      ],
      body: JSON.stringify(verdict.body),
    },
  };
}

export interface GrpcListener {
  port: number;
  close(): Promise<void>;
}

/** Serves the Authorization service on host:port (port 0: any free one). */
export async function startExtAuthzGrpc(
  service: ExtAuthzService,
  where: { host: string; port: number },
  log: Logger,
): Promise<GrpcListener> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
  server.addService(authorizationService(), {
    Check(call: grpc.ServerUnaryCall<CheckRequestMessage, unknown>, callback: grpc.sendUnaryData<unknown>) {
      const brokerAuthorization = call.metadata.get('authorization')[0];
      const forwarded = forwardedCallOf(call.request);
      const answer =
        'refused' in forwarded
          ? Promise.resolve(checkResponseOf(forwarded.refused))
          : service
              .authorize(forwarded.call, typeof brokerAuthorization === 'string' ? brokerAuthorization : undefined)
              .then(checkResponseOf);
      answer.then(
        (response) => callback(null, response),
        (error: unknown) => {
          log.error({ err: error }, 'ext_authz gRPC: unexpected error');
          callback({ code: Code.UNAVAILABLE, details: 'nothing was allowed' });
        },
      );
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${where.host}:${where.port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  log.info({ host: where.host, port }, 'ext_authz gRPC listening');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const deadline = setTimeout(() => server.forceShutdown(), 5000);
        server.tryShutdown(() => {
          clearTimeout(deadline);
          resolve();
        });
      }),
  };
}
