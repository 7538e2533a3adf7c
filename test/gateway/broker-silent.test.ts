import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createAgentSession } from '../../gateway/src/agent-session';
import { parseConfig } from '../../gateway/src/config';
import { createGatewayCore, serveHttp } from '../../gateway/src/gateway';
import { GithubUpstream } from '../../gateway/src/github/upstream';
import { CodeHostConnector } from '../../gateway/src/github/connector';
import { githubToolMappings } from '../../gateway/src/github/tools';
import { call, RecordingUpstream } from './support/gateway-world';

/**
 * A grant broker that accepts connections and never answers: the gateway gives up after
 * `brokerTimeoutMs` and fails closed — an agent's HTTP request is a 503, a call is refused
 * `broker_unavailable` — and the upstream is never called.
 */
let silent: Server;
const sockets: Socket[] = [];
let brokerUrl: string;
beforeAll(async () => {
  silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  brokerUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

function gateway() {
  const config = parseConfig({
    brokerUrl,
    brokerTokenEnv: 'GATEWAY_BROKER_TOKEN',
    upstream: { builtin: 'github' },
    tools: githubToolMappings(),
    brokerTimeoutMs: 300,
  });
  const upstream = new RecordingUpstream(new GithubUpstream(new CodeHostConnector('http://127.0.0.1:9', 'ghs_unused')));
  return { core: createGatewayCore(config, { env: { GATEWAY_BROKER_TOKEN: 'bkt_test' }, upstream }), upstream };
}

it('refuses a call broker_unavailable within the timeout, and never calls the upstream', async () => {
  const { core, upstream } = gateway();
  const server = createAgentSession(core, { grantId: 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', agentToken: 'art_test' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const agent = new Client({ name: 'agent', version: '1' });
  await agent.connect(clientSide);
  const started = Date.now();
  const result = await call(agent, 'repos.read_file', { repository: 'acme/api', path: 'README.md' });
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(result).toMatchObject({ isError: true, structuredContent: { reason: 'broker_unavailable' } });
  expect(upstream.calls).toEqual([]);
  await agent.close();
});

it("answers an agent's HTTP request 503 when the broker cannot say whether its token is good", async () => {
  const { core } = gateway();
  const listener = await serveHttp(core, { port: 0, host: '127.0.0.1' });
  try {
    const answer = await fetch(listener.url(), {
      method: 'POST',
      headers: { Authorization: 'Bearer art_test', 'Grant-Id': 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(answer.status).toBe(503);
    expect(await answer.json()).toMatchObject({ code: 'broker_unavailable' });
  } finally {
    await listener.close();
  }
});
