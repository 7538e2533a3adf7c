import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  configFor,
  EVERYTHING,
  GATEWAY_MAIN,
  gatewayWorld,
  httpAgent,
  names,
  startHttpGateway,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * A new user registering the connection for a gateway in front of an MCP server, as they would
 * guess it: `kind: "mcp_server"`. The service stores it (CONTRACT §3: other kinds are stored), and
 * the first grant on it is refused with a problem that says what the connection is and what it
 * must be; the gateway's `connection-tools`, which they ran to get the tools, said it first.
 */
let world: GatewayWorld;
beforeAll(async () => {
  world = await gatewayWorld();
});
afterAll(() => world.service.close());

it('connection-tools says which kind of connection to register its tools on', async () => {
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'gateway-kind-')), 'gateway.json');
  writeFileSync(file, JSON.stringify(config));
  const printed = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
    execFile(process.execPath, [GATEWAY_MAIN, 'connection-tools', '--config', file], (error, stdout, stderr) =>
      error ? reject(error) : resolve({ stdout, stderr }),
    ),
  );
  // stdout stays the tools alone (scripts pipe it into the request body); the advice is on stderr.
  expect(JSON.parse(printed.stdout)).toEqual([{ name: 'everything.echo', access: 'read' }]);
  expect(printed.stderr).toMatch(/"kind": "code_hosting_app"/);
});

it('a grant on an mcp_server connection is refused naming both kinds; on a code_hosting_app one it works through the gateway', async () => {
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  const register = async (kind: string) =>
    (
      await world.service.http
        .post('/api/connections')
        .set(world.owner.auth)
        .send({
          kind,
          brokerId: world.brokerId,
          externalInstallationId: `everything-${kind}`,
          tools: [{ name: 'everything.echo', access: 'read' }],
        })
        .expect(201)
    ).body.id as string;
  const grantOn = (connectionId: string) =>
    world.service.http
      .post('/api/grants')
      .set(world.owner.auth)
      .send({ connectionId, target: { kind: 'pod', id: world.podId }, tools: ['everything.echo'] });

  const refused = await grantOn(await register('mcp_server'));
  expect(refused.status).toBe(422);
  expect(refused.body).toMatchObject({ code: 'connection_kind_not_allowed', reasons: ['connection_kind_not_allowed'] });
  expect(refused.body.detail).toMatch(/"mcp_server"/);
  expect(refused.body.detail).toMatch(/code_hosting_app/);

  const granted = await grantOn(await register('code_hosting_app'));
  expect(granted.status).toBe(201);
  const gateway = await startHttpGateway(world, config);
  try {
    const agent = await httpAgent(gateway.url, world.agent.token, granted.body.id as string);
    expect(names((await agent.listTools()).tools)).toEqual(['echo']);
    await agent.close();
  } finally {
    await gateway.close();
  }
});
