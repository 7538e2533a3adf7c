import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect, test } from '@playwright/test';
import { connectionTools, parseConfig } from '../../gateway/src/config';
import { createGatewayCore, serveHttp } from '../../gateway/src/gateway';
import { registerGatewayResource } from '../../src/oauth/resources';
import { PlaywrightHost } from './oauth-host';
import { seedWorld, startConsoleService, uniqueId, type ConsoleService } from './world';

const INSPECTOR = path.resolve(__dirname, '../../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const EVERYTHING = path.resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let service: ConsoleService;
let world: Awaited<ReturnType<typeof seedWorld>>;
let gateway: { url: string; close(): Promise<void> };
let callbackUrl: string;

test.beforeAll(async () => {
  service = await startConsoleService();
  world = await seedWorld(service);
  callbackUrl = 'http://127.0.0.1:9/callback';
  const config = parseConfig({
    brokerUrl: service.baseUrl,
    brokerTokenEnv: 'GATEWAY_BROKER_TOKEN',
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' }, 'get-sum': { grantTool: 'everything.sum', access: 'read' } },
  });
  const core = createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: world.brokerToken } });
  const listener = await serveHttp(core, { port: 0, host: '127.0.0.1' });
  gateway = {
    url: listener.url(),
    close: async () => {
      await listener.close();
      await core.upstream.close();
      await core.close();
    },
  };
  await registerGatewayResource(service.deps.db, world.brokerId, listener.resource());
  const connection = await world.owner.post('/api/connections', {
    kind: 'code_hosting_app',
    brokerId: world.brokerId,
    externalInstallationId: uniqueId('gw'),
    tools: connectionTools(config),
  });
  await world.owner.post('/api/grants', {
    connectionId: connection.id,
    target: { kind: 'pod', id: world.podId },
    tools: ['everything.echo', 'everything.sum'],
  });
});
test.afterAll(async () => {
  await gateway?.close();
  await service?.close();
});

test('a host that knows only the gateway URL: 401, consent in the page, then tools/list and tools/call on the child grant; revoked in the console, cut off', async ({
  page,
}) => {
  const host = new PlaywrightHost(page, { name: 'Gateway Host', redirectUrl: callbackUrl });
  const first = new StreamableHTTPClientTransport(new URL(gateway.url), { authProvider: host });
  await expect(new Client({ name: 'host', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
  // The consent page sends a person not signed in to the sign-in page, remembering where to return.
  await expect(page).toHaveURL(`${service.baseUrl}/console/sign-in`);
  await page.goto(await service.linkFor(world.ownerId));
  const form = page.getByRole('form', { name: 'What may it use?' });
  await form.getByRole('checkbox', { name: 'everything.sum' }).uncheck();
  const back = page.waitForRequest((request) => request.url().startsWith(callbackUrl));
  await form.getByRole('button', { name: 'Allow' }).click();
  await first.finishAuth(new URL((await back).url()).searchParams.get('code')!);
  const client = new Client({ name: 'host', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { authProvider: host }));
  expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
  const result = await client.callTool({ name: 'echo', arguments: { message: 'through consent' } });
  expect(JSON.stringify(result.content)).toContain('through consent');

  // Revoked on the pod's grants page: the host's next call is refused.
  await page.goto(`${service.baseUrl}/console/pods/${world.podId}/grants`);
  await page.getByRole('button', { name: /^Revoke .* held by Gateway Host/ }).click();
  await page.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Revoked' })).toBeVisible();
  await expect(client.callTool({ name: 'echo', arguments: { message: 'after revoke' } })).rejects.toThrow();
});

test('the MCP Inspector CLI, headless: discovers, registers, the person consents in the page, and it lists the child grant tools', async ({
  page,
}) => {
  const bin = INSPECTOR;
  const callbackPort = 18_000 + Math.floor(Math.random() * 1000);
  const child = spawn(
    process.execPath,
    [bin, '--cli', gateway.url, '--method', 'tools/list', '--callback-url', `http://127.0.0.1:${callbackPort}/oauth/callback`],
    {
      env: {
        ...process.env,
        MCP_AUTO_OPEN_ENABLED: 'true',
        BROWSER: 'true',
        MCP_INSPECTOR_SECRET_STORE: 'memory',
        HOME: mkdtempSync(path.join(tmpdir(), 'insp-')),
      },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /Please navigate to: (\S+)/.exec(stderr);
      if (found) resolve(found[1]!);
    });
    child.on('exit', () => reject(new Error(`inspector exited: ${stderr}`)));
  });
  await page.goto(url);
  // The consent page sends a person not signed in to the sign-in page, remembering where to return.
  await expect(page).toHaveURL(`${service.baseUrl}/console/sign-in`);
  await page.goto(await service.linkFor(world.ownerId));
  await expect(page.getByRole('heading', { level: 1, name: 'Connect MCP Inspector?' })).toBeVisible();
  const form = page.getByRole('form', { name: 'What may it use?' });
  await form.getByRole('checkbox', { name: 'everything.echo' }).uncheck();
  await form.getByRole('button', { name: 'Allow' }).click();
  const code = await new Promise<number>((resolve) => child.on('exit', (exitCode) => resolve(exitCode ?? -1)));
  expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
  expect((JSON.parse(stdout) as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name)).toEqual(['get-sum']);
});
