import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createClient } from '@grant-broker/client';
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
}

/** The parts every session shares, built from a validated config; throws naming what is missing. */
export function createGatewayCore(config: GatewayConfig, options: GatewayOptions = {}): GatewayCore {
  const env = options.env ?? process.env;
  const brokerToken = env[config.brokerTokenEnv];
  if (!brokerToken) throw new Error(`set ${config.brokerTokenEnv} (brokerTokenEnv: the gateway's broker token)`);
  const upstream = options.upstream ?? upstreamOf(config, env);
  const fetchWithin = bounded(options.fetch ?? fetch, config.brokerTimeoutMs);
  const broker = createClient({ baseUrl: config.brokerUrl, token: brokerToken, fetch: fetchWithin });
  const pathRoot = 'pathRoot' in config.upstream ? config.upstream.pathRoot : undefined;
  return { brokerUrl: config.brokerUrl, broker, upstream, catalog: new ToolCatalog(upstream, config.tools), fetch: fetchWithin, pathRoot };
}

/** fetch that gives up after `timeoutMs`: a grant broker that never answers must not hold an agent's call. */
function bounded(fetchImpl: typeof fetch, timeoutMs: number): typeof fetch {
  return (input, init) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    // openapi-fetch hands a Request whose own signal (a caller's abort) must still count.
    const own = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    return fetchImpl(input, { ...init, signal: own ? AbortSignal.any([own, timeout]) : timeout });
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
  server.onclose = () => void core.upstream.close();
  await server.connect(new StdioServerTransport());
  endWithHost(() => core.upstream.close());
}

/** Many agents over streamable HTTP on `listen`. */
export async function serveHttp(core: GatewayCore, listen: ListenOptions): Promise<HttpListener> {
  const listener = new HttpListener(core, listen);
  await listener.listen();
  return listener;
}
