import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createClient, type OutcomeTrouble } from '@grant-broker/client';
import { keptAliveFetch } from './broker-transport';
import { GrantCache } from './grant-cache';
import { createAgentSession, type AgentIdentity, type GatewayCore } from './agent-session';
import type { GatewayConfig } from './config';
import { GithubUpstream } from './github/upstream';
import { endWithHost } from './host-lifetime';
import { HttpListener, type ListenOptions } from './http-listener';
import { ToolCatalog } from './tool-catalog';
import { McpUpstream } from './upstream/mcp';
import type { Upstream } from './upstream/upstream';

export interface GatewayOptions {
  env?: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
  /** The upstream itself, for a program that builds its own (the config's `upstream` is then not read). */
  upstream?: Upstream;
  /** Run last when the gateway closes (the traces' last batch sent, say). */
  onClose?: () => Promise<void>;
}

/** The parts every session shares, built from a validated config; throws naming what is missing. */
export function createGatewayCore(config: GatewayConfig, options: GatewayOptions = {}): GatewayCore {
  const env = options.env ?? process.env;
  const brokerToken = env[config.brokerTokenEnv];
  if (!brokerToken) throw new Error(`set ${config.brokerTokenEnv} (brokerTokenEnv: the gateway's broker token)`);
  const upstream = options.upstream ?? upstreamOf(config, env);
  const transport: { fetch: typeof fetch; Request?: typeof Request; close: () => Promise<void> } = options.fetch
    ? { fetch: options.fetch, close: async () => undefined }
    : keptAliveFetch();
  const fetchWithin = bounded(transport.fetch, config.brokerTimeoutMs, !options.fetch);
  const broker = createClient({
    baseUrl: config.brokerUrl,
    token: brokerToken,
    fetch: fetchWithin,
    // Each request as the transport sends it, without a platform Request's streams (./broker-transport.ts).
    ...(transport.Request ? { Request: transport.Request } : {}),
    // Off the call's path: the agent has its result as soon as the upstream answered (./outcomes.ts).
    batchOutcomes: { maxDelayMs: config.outcomeBatchMs },
    onOutcomeTrouble: reportTrouble,
  });
  const pathRoot = 'pathRoot' in config.upstream ? config.upstream.pathRoot : undefined;
  return {
    brokerUrl: config.brokerUrl,
    broker,
    upstream,
    catalog: new ToolCatalog(upstream, config.tools),
    grants: new GrantCache(),
    fetch: fetchWithin,
    pathRoot,
    close: () => closeBroker(broker, transport.close).then(options.onClose),
  };
}

/** How long the outcomes still held may take to reach the grant broker when the gateway stops. */
const FLUSH_ON_CLOSE_MS = 5_000;

/** Ends the gateway's ties to the grant broker: the outcomes it holds sent (within a bound), then its sockets. */
async function closeBroker(broker: GatewayCore['broker'], closeTransport: () => Promise<void>): Promise<void> {
  try {
    await broker.flushOutcomes(AbortSignal.timeout(FLUSH_ON_CLOSE_MS));
  } catch {
    process.stderr.write(
      `mcp-gateway: ${broker.pendingOutcomes()} call outcomes could not be sent to the grant broker; their records stay pending\n`,
    );
  }
  await closeTransport();
}

/** Never a call's arguments or a token: the call's id and what went wrong. */
function reportTrouble(trouble: OutcomeTrouble): void {
  const what =
    trouble.kind === 'unreachable'
      ? `the grant broker did not take ${trouble.pending} call outcomes (${(trouble.cause as Error).message}); sending them again`
      : trouble.kind === 'dropped'
        ? `the outcome of ${trouble.report.callId} was dropped (too many waiting); its record stays pending`
        : `the outcome of ${trouble.report.callId} was refused: ${trouble.status}`;
  process.stderr.write(`mcp-gateway: ${what}\n`);
}

/**
 * fetch that gives up after `timeoutMs`: a grant broker that never answers must not hold an agent's
 * call. Over the gateway's own transport, which hands back an answer already read whole, the
 * deadline is one timer cleared as the answer comes (AbortSignal.timeout's signal and its timer
 * outlived every check by the whole timeout); a `fetch` given in the options may still be reading
 * its body after it resolves, so the deadline's signal is left to run out there.
 */
function bounded(fetchImpl: typeof fetch, timeoutMs: number, answersWhole: boolean): typeof fetch {
  return async (input, init) => {
    // openapi-fetch hands a Request (or a BrokerRequest) whose own signal (a caller's abort) must still count.
    const own = init?.signal ?? (typeof input === 'object' && 'signal' in input ? input.signal : undefined);
    if (!answersWhole) {
      const timeout = AbortSignal.timeout(timeoutMs);
      return fetchImpl(input, { ...init, signal: own ? AbortSignal.any([own, timeout]) : timeout });
    }
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
    try {
      return await fetchImpl(input, { ...init, signal: own ? AbortSignal.any([own, deadline.signal]) : deadline.signal });
    } finally {
      clearTimeout(timer);
    }
  };
}

function upstreamOf(config: GatewayConfig, env: NodeJS.ProcessEnv): Upstream {
  const upstream = config.upstream;
  if ('builtin' in upstream) return GithubUpstream.fromConfig(upstream, env, config.callTimeoutMs);
  return new McpUpstream(upstream, config.callTimeoutMs);
}

/**
 * One agent over stdio: the grant and the agent's token from the environment (GRANT_ID,
 * AGENT_TOKEN). The process ends with its host (./host-lifetime.ts).
 */
export async function serveStdio(core: GatewayCore, identity: AgentIdentity): Promise<void> {
  const server = createAgentSession(core, identity);
  server.onclose = () => void Promise.all([core.upstream.close(), core.close()]);
  await server.connect(new StdioServerTransport());
  endWithHost(() => Promise.all([core.upstream.close(), core.close()]).then(() => undefined));
}

/** Many agents over streamable HTTP on `listen`. */
export async function serveHttp(core: GatewayCore, listen: ListenOptions): Promise<HttpListener> {
  const listener = new HttpListener(core, listen);
  await listener.listen();
  return listener;
}
