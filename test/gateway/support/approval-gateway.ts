import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpUpstream } from '../../../gateway/src/upstream/mcp';
import {
  configFor,
  connectionFor,
  EVERYTHING,
  gatewayWorld,
  grantOn,
  RecordingUpstream,
  startHttpGateway,
  type GatewayWorld,
} from './gateway-world';

/** server-everything's `get-annotated-message`, mapped as a write: a grant in `approve` mode holds it for a person. */
export const APPROVAL_TOOLS = { 'get-annotated-message': { grantTool: 'everything.annotate', access: 'write' } } as const;
export const APPROVAL_ARGS = { messageType: 'success', includeImage: false };

export interface ApprovalGateway {
  world: GatewayWorld;
  connectionId: string;
  gateway: Awaited<ReturnType<typeof startHttpGateway>>;
  /** Every call that reached server-everything. */
  upstream: RecordingUpstream;
  /** The same config as a file, for a gateway an agent's host starts itself over stdio. */
  configFile: string;
  /** Clients the suite opened, closed by `close`. */
  open: Client[];
  /** A new grant on the connection whose writes wait for approval. */
  approvalGrant: () => Promise<string>;
  close: () => Promise<void>;
}

/** A world, the gateway in this process before server-everything over stdio, and its config file: where the approval suites start. */
export async function approvalGateway(): Promise<ApprovalGateway> {
  const world = await gatewayWorld();
  const config = configFor(world, { upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] }, tools: APPROVAL_TOOLS });
  const connectionId = await connectionFor(world, config);
  const upstream = new RecordingUpstream(new McpUpstream(config.upstream as { command: string; args: string[] }, config.callTimeoutMs));
  const gateway = await startHttpGateway(world, config, upstream);
  const configFile = path.join(mkdtempSync(path.join(tmpdir(), 'gateway-approval-')), 'gateway.json');
  writeFileSync(configFile, JSON.stringify(config));
  const open: Client[] = [];
  return {
    world,
    connectionId,
    gateway,
    upstream,
    configFile,
    open,
    approvalGrant: () => grantOn(world, connectionId, { tools: ['everything.annotate'], writeMode: 'approve' }),
    close: async () => {
      for (const client of open) await client.close().catch(() => undefined);
      await gateway.close();
      await world.service.close();
    },
  };
}
