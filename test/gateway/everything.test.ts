import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { GatewayConfig } from '../../gateway/src/config';
import { metricsRegistry } from '../../src/kernel/metrics';
import { attenuateGrant } from '../support/world';
import {
  call,
  configFor,
  connectionFor,
  EVERYTHING,
  gatewayWorld,
  grantOn,
  httpAgent,
  names,
  startEverythingHttp,
  startHttpGateway,
  stdioAgent,
  text,
  trail,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The MCP project's reference server `server-everything`, which nobody here wrote, behind the
 * gateway: over stdio (the agent's host starts the built gateway with a config file, the gateway
 * starts the server) and over streamable HTTP (the server as a child process on a spare port, the
 * agent over HTTP with its token and grant). The agent is the MCP SDK's own Client. Every call is
 * checked, budgeted, approved where needed and recorded; what is not mapped is never listed or called.
 */
const TOOLS = {
  echo: { grantTool: 'everything.echo', access: 'read' },
  'get-sum': { grantTool: 'everything.sum', access: 'read' },
  'get-annotated-message': { grantTool: 'everything.annotate', access: 'write' },
  'trigger-long-running-operation': { grantTool: 'everything.long_run', access: 'read' },
} as const;

let world: GatewayWorld;

/** How many times the service has answered a read of a grant (its request histogram's count). */
async function grantReads(): Promise<number> {
  const { values } = await metricsRegistry.getSingleMetric('http_request_duration_seconds')!.get();
  return values
    .filter(
      (v) =>
        (v as { metricName?: string }).metricName === 'http_request_duration_seconds_count' &&
        v.labels.route === '/api/grants/:grantId' &&
        v.labels.method === 'GET',
    )
    .reduce((sum, v) => sum + v.value, 0);
}
const cleanups: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  world = await gatewayWorld();
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await world.service.close();
});

/** The same story over either transport: list, call, refuse, approve, exhaust, and the trail. */
async function agentStory(connect: (grantId: string) => Promise<Client>, connectionId: string) {
  const grantId = await grantOn(world, connectionId, {
    tools: ['everything.echo', 'everything.sum', 'everything.annotate'],
    writeMode: 'approve',
    budget: { calls: 4, windowMs: 60_000 },
  });
  const agent = await connect(grantId);
  cleanups.push(() => agent.close());

  // Listed: the grant's mapped tools; never get-env (not mapped), nor the mapped tool the grant lacks.
  const { tools } = await agent.listTools();
  expect(names(tools)).toEqual(['echo', 'get-annotated-message', 'get-sum']);
  expect(tools.find((tool) => tool.name === 'get-annotated-message')?.description).toMatch(/human's approval/);
  expect(tools.find((tool) => tool.name === 'echo')?.inputSchema).toMatchObject({ properties: { message: { type: 'string' } } });

  const echoed = await call(agent, 'echo', { message: 'hello through the gateway' });
  expect(echoed.isError).toBeFalsy();
  expect(text(echoed)).toBe('Echo: hello through the gateway');

  // Refused before the check: nothing recorded, nothing counted, nothing sent.
  const invalid = await call(agent, 'get-sum', { a: 'SENTINEL', b: 1 });
  expect(invalid).toMatchObject({ isError: true, structuredContent: { reason: 'invalid_arguments' } });
  expect(text(invalid)).toMatch(/a must be number/);
  expect(text(invalid)).not.toContain('SENTINEL');
  const unmapped = await call(agent, 'get-env', {});
  expect(unmapped).toMatchObject({ isError: true, structuredContent: { reason: 'unknown_tool' } });
  expect(text(unmapped)).not.toMatch(/PATH|HOME/);

  // Mapped but not in the grant: the check refuses it (and records the refusal).
  const notGranted = await call(agent, 'trigger-long-running-operation', { duration: 0.01, steps: 1 });
  // The check's explanation reaches the agent: which rule, at which level, and what would unlock it.
  expect(notGranted).toMatchObject({
    isError: true,
    structuredContent: {
      reason: 'tool_not_allowed',
      explanation: { rule: 'broker.check.tool_not_allowed', level: 0, unlock: expect.any(String) },
    },
  });

  // A write under `approve` waits for a human; once approved, the same call goes through once.
  const asked = await call(agent, 'get-annotated-message', { messageType: 'success' });
  expect(asked).toMatchObject({
    isError: true,
    structuredContent: { reason: 'approval_required', approvalId: expect.stringMatching(/^apr_/) },
  });
  const approvalId = (asked.structuredContent as { approvalId: string }).approvalId;
  const pending = await call(agent, 'get-annotated-message', { messageType: 'success' });
  expect(pending).toMatchObject({ isError: true, structuredContent: { reason: 'approval_pending' } });
  await world.service.http.post(`/api/approvals/${approvalId}/approve`).set(world.owner.auth).send({ note: 'ok' }).expect(200);
  const approved = await call(agent, 'get-annotated-message', { messageType: 'success' });
  expect(approved.isError).toBeFalsy();
  expect(JSON.stringify(approved.content)).toMatch(/success/i);

  // Budget of 4: echo and the approved write used two.
  expect(text(await call(agent, 'get-sum', { a: 1, b: 2 }))).toMatch(/3/);
  expect((await call(agent, 'echo', { message: 'four' })).isError).toBeFalsy();
  const exhausted = await call(agent, 'echo', { message: 'five' });
  expect(exhausted).toMatchObject({ isError: true, structuredContent: { reason: 'budget_exhausted', retryAfterMs: expect.any(Number) } });
  expect(text(exhausted)).toMatch(/Retry after \d+ s/);

  const { outcomes } = await trail(world, grantId);
  expect(outcomes).toEqual([
    'everything.echo:succeeded',
    'everything.long_run:denied',
    // Held, then approved: the re-sent call is the one that succeeded.
    'everything.annotate:approved',
    'everything.annotate:denied',
    'everything.annotate:succeeded',
    'everything.sum:succeeded',
    'everything.echo:succeeded',
    'everything.echo:denied',
  ]);
  return { agent, grantId };
}

describe('server-everything over stdio, the agent over stdio through the built gateway', () => {
  it('checks, budgets, approves and records every call', async () => {
    const config = configFor(world, { upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] }, tools: TOOLS });
    const connectionId = await connectionFor(world, config);
    const folder = mkdtempSync(path.join(tmpdir(), 'gateway-'));
    const file = path.join(folder, 'gateway.json');
    writeFileSync(file, JSON.stringify(config));
    await agentStory(
      (grantId) => stdioAgent(file, { GATEWAY_BROKER_TOKEN: world.brokerToken, GRANT_ID: grantId, AGENT_TOKEN: world.agent.token }),
      connectionId,
    );
  });
});

describe('server-everything over streamable HTTP, agents over streamable HTTP', () => {
  let config: GatewayConfig;
  let connectionId: string;
  let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
  beforeAll(async () => {
    const everything = await startEverythingHttp();
    cleanups.push(everything.close);
    config = configFor(world, { upstream: { url: everything.url }, tools: TOOLS, callTimeoutMs: 1_000 });
    connectionId = await connectionFor(world, config);
    gateway = await startHttpGateway(world, config);
    cleanups.push(gateway.close);
  });

  it('checks, budgets, approves and records every call', async () => {
    await agentStory((grantId) => httpAgent(gateway.url, world.agent.token, grantId), connectionId);
  });

  it('serves many agents and grants on one process, each seeing its own grant', async () => {
    const other = await (await import('../support/world')).installAgent(world.service, world.owner, world.podId, 'reviewer');
    const [echoOnly, sumOnly] = await Promise.all([
      grantOn(world, connectionId, { tools: ['everything.echo'] }),
      grantOn(world, connectionId, { tools: ['everything.sum'] }),
    ]);
    const agents = await Promise.all([
      httpAgent(gateway.url, world.agent.token, echoOnly),
      httpAgent(gateway.url, other.token, sumOnly),
      httpAgent(gateway.url, other.token, echoOnly),
    ]);
    cleanups.push(...agents.map((agent) => () => agent.close()));
    const lists = await Promise.all(agents.map(async (agent) => names((await agent.listTools()).tools)));
    expect(lists).toEqual([['echo'], ['get-sum'], ['echo']]);
    const results = await Promise.all([
      call(agents[0]!, 'echo', { message: 'a' }),
      call(agents[1]!, 'echo', { message: 'b' }),
      call(agents[2]!, 'get-sum', { a: 1, b: 1 }),
    ]);
    expect(results.map((result) => (result.structuredContent as { reason?: string } | undefined)?.reason ?? 'ok')).toEqual([
      'ok',
      'tool_not_allowed',
      'tool_not_allowed',
    ]);
  });

  it("an agent's attenuated child grant lists and allows only what the child keeps", async () => {
    const parent = await grantOn(world, connectionId, { tools: ['everything.echo', 'everything.sum'] });
    const child = await attenuateGrant(world.service, world.agent, parent, { tools: ['everything.sum'] });
    const agent = await httpAgent(gateway.url, world.agent.token, child.id);
    cleanups.push(() => agent.close());
    expect(names((await agent.listTools()).tools)).toEqual(['get-sum']);
    expect(await call(agent, 'echo', { message: 'x' })).toMatchObject({ isError: true, structuredContent: { reason: 'tool_not_allowed' } });
    expect(text(await call(agent, 'get-sum', { a: 2, b: 2 }))).toMatch(/4/);
    expect((await trail(world, child.id)).outcomes).toEqual(['everything.echo:denied', 'everything.sum:succeeded']);
  });

  it('a revoke cuts the next call, and the listing with it; the listing is kept while checks see the grant unchanged', async () => {
    const grantId = await grantOn(world, connectionId, { tools: ['everything.echo'] });
    const agent = await httpAgent(gateway.url, world.agent.token, grantId);
    cleanups.push(() => agent.close());
    expect(names((await agent.listTools()).tools)).toEqual(['echo']);
    expect((await call(agent, 'echo', { message: 'x' })).isError).toBeFalsy();
    // Read again once, under the version the check answered with; then kept while checks see that version.
    expect(names((await agent.listTools()).tools)).toEqual(['echo']);
    const before = await grantReads();
    expect((await call(agent, 'echo', { message: 'y' })).isError).toBeFalsy();
    expect(names((await agent.listTools()).tools)).toEqual(['echo']);
    expect(names((await agent.listTools()).tools)).toEqual(['echo']);
    // Two listings, no read of theirs (the door's own read, once per 5 s, may fall in between on a slow machine).
    expect(await grantReads()).toBeLessThanOrEqual(before + 1);

    await world.service.http.post(`/api/grants/${grantId}/revoke`).set(world.owner.auth).expect(200);
    // Every call is checked whatever the listing holds.
    expect(await call(agent, 'echo', { message: 'x' })).toMatchObject({ isError: true, structuredContent: { reason: 'revoked' } });
    expect((await agent.listTools()).tools).toEqual([]);
  });

  it('an upstream slower than callTimeoutMs is a failed outcome and a tool error, not a hang', async () => {
    const grantId = await grantOn(world, connectionId, { tools: ['everything.long_run'] });
    const agent = await httpAgent(gateway.url, world.agent.token, grantId);
    cleanups.push(() => agent.close());
    const started = Date.now();
    const slow = await call(agent, 'trigger-long-running-operation', { duration: 20, steps: 2 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(slow).toMatchObject({ isError: true, structuredContent: { reason: 'upstream_timeout' } });
    const { items } = await trail(world, grantId);
    expect(items).toEqual([expect.objectContaining({ tool: 'everything.long_run', outcome: 'failed', durationMs: expect.any(Number) })]);
    expect(items[0]!.durationMs).toBeGreaterThanOrEqual(1_000);
  });
});
