import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  call,
  configFor,
  connectionFor,
  gatewayWorld,
  grantOn,
  httpAgent,
  startHttpGateway,
  trail,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * An upstream that misbehaves (test/support/broken-mcp-server.mjs): it dies in the middle of a call,
 * answers something that is not a tool result, or never answers. Each is a tool error for the agent
 * and a `failed` outcome in the call trail, within the configured timeout, never a hang; and the
 * gateway starts the upstream again for the next call.
 */
const BROKEN = path.resolve(__dirname, '../support/broken-mcp-server.mjs');
let world: GatewayWorld;
let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
let agent: Client;
let grantId: string;

beforeAll(async () => {
  world = await gatewayWorld();
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [BROKEN] },
    tools: Object.fromEntries(['crash', 'garbage', 'hang', 'fine'].map((name) => [name, { grantTool: `broken.${name}`, access: 'read' }])),
    callTimeoutMs: 1_500,
  });
  gateway = await startHttpGateway(world, config);
  grantId = await grantOn(world, await connectionFor(world, config), {
    tools: ['broken.crash', 'broken.garbage', 'broken.hang', 'broken.fine'],
  });
  agent = await httpAgent(gateway.url, world.agent.token, grantId);
});
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await world.service.close();
});

it.each([
  ['dies in the middle of the call', 'crash', 'upstream_closed', 1_500],
  ['answers garbage', 'garbage', 'upstream_invalid_answer', 1_500],
  ['never answers', 'hang', 'upstream_timeout', 5_000],
])('an upstream that %s: a tool error and a failed outcome, then the next call works', async (_case, tool, reason, withinMs) => {
  const started = Date.now();
  const result = await call(agent, tool, { note: 'x' });
  expect(Date.now() - started).toBeLessThan(withinMs);
  expect(result).toMatchObject({ isError: true, structuredContent: { reason } });
  expect((result.content[0] as { text: string }).text).toMatch(/^The call was allowed but /);
  expect((await trail(world, grantId)).items.at(-1)).toMatchObject({ tool: `broken.${tool}`, outcome: 'failed', reason: 'allowed' });

  // The gateway is still serving: a well-behaved call on the same upstream (restarted if it died) succeeds.
  const fine = await call(agent, 'fine', {});
  expect(fine.isError).toBeFalsy();
  expect((await trail(world, grantId)).items.at(-1)).toMatchObject({ tool: 'broken.fine', outcome: 'succeeded' });
});
