import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { connectionTools, parseConfig, type GatewayConfig } from '../../../gateway/src/config';
import { createGatewayCore, serveHttp } from '../../../gateway/src/gateway';
import type { HttpListener } from '../../../gateway/src/http-listener';
import type { GatewayCore } from '../../../gateway/src/agent-session';
import type { Upstream } from '../../../gateway/src/upstream/upstream';
import { startService, type TestService } from '../../support/service';
import { broker, human, installAgent, podWith, type Human, type InstalledAgent } from '../../support/world';

export const ROOT = path.resolve(__dirname, '../../..');
export const GATEWAY_MAIN = path.join(ROOT, 'dist/gateway/src/main.js');
export const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const LOOPBACK_LISTEN = path.join(__dirname, 'loopback-listen.cjs');

/** A service, a pod with its owner and an installed agent, and a broker registered for the gateway. */
export interface GatewayWorld {
  service: TestService;
  owner: Human;
  podId: string;
  agent: InstalledAgent;
  brokerId: string;
  brokerToken: string;
}

export async function gatewayWorld(): Promise<GatewayWorld> {
  const service = await startService();
  const owner = human(service, 'owner');
  const podId = await podWith(service, owner);
  const agent = await installAgent(service, owner, podId, 'coder');
  const registered = await broker(service, 'mcp-gateway');
  return { service, owner, podId, agent, brokerId: registered.id, brokerToken: registered.token };
}

/** The gateway's config for this world: the broker token in GATEWAY_BROKER_TOKEN, never in the file. */
export function configFor(world: GatewayWorld, fields: Pick<GatewayConfig, 'upstream' | 'tools'> & Partial<GatewayConfig>): GatewayConfig {
  return parseConfig({ brokerUrl: world.service.baseUrl, brokerTokenEnv: 'GATEWAY_BROKER_TOKEN', ...fields });
}

/** The connection the gateway checks against, registered with the tools its config maps. */
export async function connectionFor(world: GatewayWorld, config: GatewayConfig): Promise<string> {
  const created = await world.service.http
    .post('/api/connections')
    .set(world.owner.auth)
    .send({
      kind: 'code_hosting_app',
      brokerId: world.brokerId,
      externalInstallationId: `gw-${Date.now()}`,
      tools: connectionTools(config),
    })
    .expect(201);
  return created.body.id as string;
}

export async function grantOn(world: GatewayWorld, connectionId: string, options: Record<string, unknown>): Promise<string> {
  const created = await world.service.http
    .post('/api/grants')
    .set(world.owner.auth)
    .send({ connectionId, target: { kind: 'pod', id: world.podId }, ...options })
    .expect(201);
  return created.body.id as string;
}

/**
 * The grant's call trail, oldest first, as `tool:outcome` (and the records themselves). The gateway
 * reports outcomes in batches after the agent has its answer: an allowed call's record is read
 * once it left `pending` (or after `settleMs`, as it then stands).
 */
export async function trail(world: Pick<GatewayWorld, 'service' | 'owner'>, grantId: string, settleMs = 3_000) {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const answer = await world.service.http.get(`/api/grants/${grantId}/calls`).set(world.owner.auth).expect(200);
    const items = [...(answer.body.items as Array<{ tool: string; outcome: string; reason: string; durationMs?: number }>)].reverse();
    if (items.some((item) => item.outcome === 'pending') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      continue;
    }
    return { items, outcomes: items.map((item) => `${item.tool}:${item.outcome}`) };
  }
}

/** The gateway in this process, listening for agents on a spare loopback port (`env`: what else its config reads). */
export async function startHttpGateway(world: GatewayWorld, config: GatewayConfig, upstream?: Upstream, env: Record<string, string> = {}) {
  const core: GatewayCore = createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: world.brokerToken, ...env }, upstream });
  const listener: HttpListener = await serveHttp(core, { port: 0, host: '127.0.0.1' });
  return {
    core,
    listener,
    url: listener.url(),
    close: async () => {
      await listener.close();
      await core.upstream.close();
      await core.close();
    },
  };
}

/** An agent as the MCP SDK's own client, over streamable HTTP with its token and grant. */
export async function httpAgent(url: string, token: string, grantId: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, 'Grant-Id': grantId } },
  });
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** An agent's host starting the built gateway over stdio with a config file, as its own config would. */
export async function stdioAgent(configFile: string, env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GATEWAY_MAIN, '--config', configFile],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** server-everything over streamable HTTP, as a child process on a spare loopback port. */
export async function startEverythingHttp(): Promise<{ url: string; child: ChildProcess; close: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-r', LOOPBACK_LISTEN, EVERYTHING, 'streamableHttp'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not listen: ${seen}`)), 15_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /LISTENING (\d+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  child.stderr!.resume();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Wraps an upstream and records every call that reached it: proof of what the upstream never saw. */
export class RecordingUpstream implements Upstream {
  readonly calls: Array<{ name: string; args: Record<string, unknown> }> = [];
  constructor(private readonly inner: Upstream) {}
  listTools(): Promise<Tool[]> {
    return this.inner.listTools();
  }
  callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    this.calls.push({ name, args });
    return this.inner.callTool(name, args);
  }
  onToolsChanged(listener: () => void): void {
    this.inner.onToolsChanged(listener);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;
export const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;
export const names = (tools: Tool[]) => tools.map((tool) => tool.name).sort();
