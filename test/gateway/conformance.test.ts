import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  configFor,
  connectionFor,
  EVERYTHING,
  gatewayWorld,
  grantOn,
  ROOT,
  startHttpGateway,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The MCP project's conformance suite (`@modelcontextprotocol/conformance`) against the gateway's
 * server side, for the scenarios that apply to a tools-only server: initialization, ping, the tool
 * list, concurrent POST streams and DNS-rebinding protection. (The resources, prompts, completion
 * and logging scenarios test capabilities the gateway does not offer; the sampling, elicitation and
 * progress ones need server-to-client messages it does not relay; the content ones call tools of
 * the suite's own reference server, which its package does not ship.) The suite connects without credentials,
 * so it talks to the gateway through a small proxy that adds the agent's token and grant, as an
 * agent's host would; Host and Origin pass through unchanged. It needs Node 22 or later: on an
 * older Node, the pinned Node of tools/node runs it.
 */
const CONFORMANCE = path.join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const PINNED_NODE = path.join(ROOT, 'tools/node/node_modules/.bin/node');
const node = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : PINNED_NODE;
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

let world: GatewayWorld;
let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
let proxy: Server;
let proxyUrl: string;

beforeAll(async () => {
  world = await gatewayWorld();
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' }, 'get-sum': { grantTool: 'everything.sum', access: 'read' } },
  });
  const grantId = await grantOn(world, await connectionFor(world, config), { tools: ['everything.echo', 'everything.sum'] });
  gateway = await startHttpGateway(world, config);
  const target = new URL(gateway.url);
  proxy = createServer((incoming, outgoing) => {
    const forwarded = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: incoming.url,
        method: incoming.method,
        headers: { ...incoming.headers, authorization: `Bearer ${world.agent.token}`, 'grant-id': grantId },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await gateway?.close();
  await world.service.close();
});

function conformance(scenario: string, outputDir: string) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      node,
      [CONFORMANCE, 'server', '--url', proxyUrl, '--scenario', scenario, '--output-dir', outputDir],
      { cwd: outputDir, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/** Every checks.json the run wrote under `dir`. */
function checksUnder(dir: string): Array<{ id: string; status: string; errorMessage?: string }> {
  const found: Array<{ id: string; status: string }> = [];
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) found.push(...checksUnder(full));
    else if (entry === 'checks.json') found.push(...(JSON.parse(readFileSync(full, 'utf8')) as typeof found));
  }
  return found;
}

it('the Node that runs the suite is there', () => {
  expect(existsSync(node)).toBe(true);
});

it.each(SCENARIOS)(
  'passes the conformance scenario %s',
  async (scenario) => {
    const outputDir = mkdtempSync(path.join(tmpdir(), `conformance-${scenario}-`));
    const run = await conformance(scenario, outputDir);
    const checks = checksUnder(outputDir);
    const failed = checks.filter((check) => check.status === 'FAILURE');
    expect({ code: run.code, failed }).toEqual({ code: 0, failed: [] });
    expect(checks.filter((check) => check.status === 'SUCCESS').length).toBeGreaterThan(0);
  },
  90_000,
);
