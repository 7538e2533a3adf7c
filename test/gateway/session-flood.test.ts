import { createGatewayCore, serveHttp } from '../../gateway/src/gateway';
import type { HttpListener } from '../../gateway/src/http-listener';
import { attenuateGrant, installAgent, podWith, type InstalledAgent } from '../support/world';
import { configFor, connectionFor, EVERYTHING, gatewayWorld, grantOn, httpAgent, names, type GatewayWorld } from './support/gateway-world';

/**
 * One pod's agents flooding the gateway's session table, as the attack went: an agent attenuates
 * its own grant into children of children (each grant's cap on live children does not bound the
 * tree) and opens one session per grant. With a table of 60, the flood used to fill it, and every
 * other agent's `initialize` answered 503 for the next 30 idle minutes. Now an agent holds at most
 * `maxSessionsPerAgent` (its own oldest closed first), a grant tree at most
 * `maxSessionsPerGrantTree`, and an agent of another pod gets in and works.
 */
jest.setTimeout(120_000);

const MAX_SESSIONS = 60;
const PER_AGENT = 32;
const PER_TREE = 48;
let world: GatewayWorld;
let listener: HttpListener;
let core: ReturnType<typeof createGatewayCore>;
let connectionId: string;

beforeAll(async () => {
  world = await gatewayWorld();
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  connectionId = await connectionFor(world, config);
  core = createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: world.brokerToken } });
  listener = await serveHttp(core, {
    port: 0,
    host: '127.0.0.1',
    maxSessions: MAX_SESSIONS,
    maxSessionsPerAgent: PER_AGENT,
    maxSessionsPerGrantTree: PER_TREE,
  });
});
afterAll(async () => {
  await listener?.close();
  await core?.upstream.close();
  await world.service.close();
});

/** A raw MCP initialize as `agent` on `grantId`: the status, and the session id it got. */
async function initialize(agent: InstalledAgent, grantId: string) {
  const answer = await fetch(listener.url(), {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${agent.token}`,
      'Grant-Id': grantId,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
    }),
  });
  await answer.text();
  return { status: answer.status, sessionId: answer.headers.get('mcp-session-id') };
}

/** A `tools/list` on a session: 200 while it lives, 404 once it was closed. */
async function listOn(agent: InstalledAgent, grantId: string, sessionId: string) {
  const answer = await fetch(listener.url(), {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${agent.token}`,
      'Grant-Id': grantId,
      'Mcp-Session-Id': sessionId,
      'MCP-Protocol-Version': '2025-06-18',
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
  });
  await answer.text();
  return answer.status;
}

/** `count` grants of the tree under `rootId`, made by `agent`: children, then children of those (10 live children a grant at most). */
async function attenuatedGrants(agent: InstalledAgent, rootId: string, count: number): Promise<string[]> {
  const grants: string[] = [];
  while (grants.length < count) {
    const child = (await attenuateGrant(world.service, agent, rootId)).id;
    grants.push(child);
    for (let i = 0; i < 9 && grants.length < count; i += 1) grants.push((await attenuateGrant(world.service, agent, child)).id);
  }
  return grants;
}

it("one pod's agents flood the table over attenuated grants; each is held to its cap, the tree to its own, and another pod's agent gets in", async () => {
  const rootId = await grantOn(world, connectionId, { tools: ['everything.echo'] });
  const attacker = world.agent;
  const accomplice = await installAgent(world.service, world.owner, world.podId, 'accomplice');

  // The attacker: 40 sessions on 40 grants of one tree.
  const attackerGrants = await attenuatedGrants(attacker, rootId, 40);
  const attackerSessions: Array<{ grantId: string; sessionId: string }> = [];
  for (const grantId of attackerGrants) {
    const opened = await initialize(attacker, grantId);
    expect(opened.status).toBe(200);
    attackerSessions.push({ grantId, sessionId: opened.sessionId! });
  }
  expect(listener.sessionCount(attacker.agentId)).toBe(PER_AGENT);
  // Its own oldest were closed to make room; its newest live.
  expect(await listOn(attacker, attackerSessions[0]!.grantId, attackerSessions[0]!.sessionId)).toBe(404);
  expect(await listOn(attacker, attackerSessions[39]!.grantId, attackerSessions[39]!.sessionId)).toBe(200);

  // A second agent of the pod on 30 more grants of the same tree: the tree stays at its cap.
  const accompliceGrants = await attenuatedGrants(accomplice, rootId, 30);
  for (const grantId of accompliceGrants) expect((await initialize(accomplice, grantId)).status).toBe(200);
  expect(listener.sessionCount(accomplice.agentId)).toBe(30);
  expect(listener.sessionCount(attacker.agentId) + listener.sessionCount(accomplice.agentId)).toBe(PER_TREE);
  expect(listener.sessionCount()).toBeLessThanOrEqual(MAX_SESSIONS);

  // An agent of another pod, on a grant of its own: in at once, and its calls work.
  const otherPod = await podWith(world.service, world.owner);
  const victim = await installAgent(world.service, world.owner, otherPod, 'victim');
  const victimGrant = (
    await world.service.http
      .post('/api/grants')
      .set(world.owner.auth)
      .send({ connectionId, target: { kind: 'pod', id: otherPod }, tools: ['everything.echo'] })
      .expect(201)
  ).body.id as string;
  const client = await httpAgent(listener.url(), victim.token, victimGrant);
  expect(names((await client.listTools()).tools)).toEqual(['echo']);
  expect(await client.callTool({ name: 'echo', arguments: { message: 'still here' } })).toMatchObject({
    content: [{ type: 'text', text: 'Echo: still here' }],
  });
  await client.close();
});

it('the table full of one agent: another agent still gets in, displacing the largest holder', async () => {
  const rootId = await grantOn(world, connectionId, { tools: ['everything.echo'] });
  // A table of 4 for this listener alone: one agent fills it.
  const small = await serveHttp(core, { port: 0, host: '127.0.0.1', maxSessions: 4 });
  try {
    const url = small.url();
    const grants = await attenuatedGrants(world.agent, rootId, 5);
    const open = (agent: InstalledAgent, grantId: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${agent.token}`,
          'Grant-Id': grantId,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      }).then(async (answer) => (await answer.text(), answer.status));
    for (const grantId of grants) expect(await open(world.agent, grantId)).toBe(200);
    expect(small.sessionCount()).toBe(4);
    const other = await installAgent(world.service, world.owner, world.podId, 'latecomer');
    expect(await open(other, grants[0]!)).toBe(200);
    expect(small.sessionCount(other.agentId)).toBe(1);
    expect(small.sessionCount(world.agent.agentId)).toBe(3);
  } finally {
    await small.close();
  }
});
