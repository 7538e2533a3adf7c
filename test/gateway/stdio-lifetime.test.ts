import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { configFor, connectionFor, EVERYTHING, gatewayWorld, grantOn, names, ROOT, type GatewayWorld } from './support/gateway-world';
import { alive, descendants, goneAfter } from './support/processes';

/**
 * A stdio gateway holds the broker token, so it must not outlive the host that started it. Each
 * case starts the real built gateway (its package's bin, and through `npx` as hosts are told to run
 * it), lets it start its upstream (server-everything) by listing tools, then ends the host's side
 * in one way and measures how long until no process of the gateway's tree is left: the gateway,
 * npx's own processes and the upstream. Under a second, every time.
 */
jest.setTimeout(60_000);

const BIN = path.join(ROOT, 'gateway/bin/mcp-gateway.js');
const HOST = path.join(__dirname, 'support/stdio-host.cjs');
let world: GatewayWorld;
let configFile: string;
let env: Record<string, string>;

const ways = {
  'the built bin': () => [process.execPath, BIN, '--config', configFile],
  'npx @grant-broker/mcp-gateway': () => ['npx', '--no-install', '@grant-broker/mcp-gateway', '--config', configFile],
};

beforeAll(async () => {
  world = await gatewayWorld();
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  const grantId = await grantOn(world, await connectionFor(world, config), { tools: ['everything.echo'] });
  configFile = path.join(mkdtempSync(path.join(tmpdir(), 'gateway-lifetime-')), 'gateway.json');
  writeFileSync(configFile, JSON.stringify(config));
  env = { GATEWAY_BROKER_TOKEN: world.brokerToken, GRANT_ID: grantId, AGENT_TOKEN: world.agent.token };
});
afterAll(() => world.service.close());

/** The child's environment: this run's, npm's own variables removed (npx is a fresh one), and the gateway's. */
function childEnv(): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  return { ...clean, ...env };
}

const leftovers: ChildProcess[] = [];
afterEach(() => {
  for (const child of leftovers.splice(0)) if (child.pid && alive(child.pid)) child.kill('SIGKILL');
});

describe.each(Object.entries(ways))('started as %s', (_way, commandLine) => {
  it('exits when its host closes its stdin: the MCP SDK client closes at once, nothing is left', async () => {
    const [command, ...args] = commandLine();
    const transport = new StdioClientTransport({ command: command!, args, env: childEnv() as Record<string, string>, cwd: ROOT });
    const client = new Client({ name: 'closing-host', version: '1' });
    await client.connect(transport);
    expect(names((await client.listTools()).tools)).toEqual(['echo']);
    const tree = [transport.pid!, ...descendants(transport.pid!)];
    // The gateway and its upstream at least (npx adds its own processes above them).
    expect(tree.length).toBeGreaterThanOrEqual(2);

    const started = Date.now();
    await client.close();
    const closedIn = Date.now() - started;
    const goneIn = await goneAfter(tree, started);
    expect({ closedIn: closedIn < 1_000, goneIn: goneIn < 1_000 }).toEqual({ closedIn: true, goneIn: true });
  });

  it('exits when its host is SIGKILLed (the kernel closes the host end of its pipes)', async () => {
    const host = spawn(process.execPath, [HOST, 'pipe', '--', ...commandLine()], {
      cwd: ROOT,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    leftovers.push(host);
    await lineFrom(host, 'READY');
    const tree = descendants(host.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(2);

    const started = Date.now();
    host.kill('SIGKILL');
    expect(await goneAfter(tree, started)).toBeLessThan(1_000);
  });
});

it('exits when its parent is SIGKILLed while something else still holds its stdin open', async () => {
  // The gateway shares the host's stdin (a FIFO this test holds open for writing, so it never ends)
  // and stdout: only the parent's death says the host is gone.
  const fifo = path.join(mkdtempSync(path.join(tmpdir(), 'gateway-fifo-')), 'stdin');
  execFileSync('mkfifo', [fifo]);
  const stdin = openSync(fifo, 'r+');
  const host = spawn(process.execPath, [HOST, 'inherit', '--', ...ways['the built bin']()], {
    cwd: ROOT,
    env: childEnv(),
    stdio: [stdin, 'pipe', 'inherit'],
  });
  leftovers.push(host);
  try {
    const send = (message: object) => writeSync(stdin, `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    send({
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    await lineFrom(host, '"id":1');
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/list', params: {} });
    await lineFrom(host, '"id":2');
    const tree = descendants(host.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(2);

    const started = Date.now();
    host.kill('SIGKILL');
    expect(await goneAfter(tree, started)).toBeLessThan(1_000);
  } finally {
    closeSync(stdin);
  }
});

function lineFrom(child: ChildProcess, needle: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line with ${needle}`)), 30_000);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!line.includes(needle)) return;
      clearTimeout(timer);
      lines.close();
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`exited (${code}) before ${needle}`)));
  });
}
