import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { githubToolMappings } from '../../gateway/src/github/tools';
import {
  call,
  configFor,
  connectionFor,
  gatewayWorld,
  grantOn,
  httpAgent,
  startHttpGateway,
  text,
  trail,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The built-in GitHub connector against a code host that misbehaves the way a hostile or broken one
 * would: a 100 MiB answer (streamed, and declared up front), an answer that never comes or
 * trickles past the deadline, and a 200 whose body is not JSON. Each is a tool error for the agent
 * and a `failed` outcome in the trail, within the configured `callTimeoutMs`, and the gateway stops
 * reading a large answer at its byte bound (the code host sees the connection closed long before
 * it could send it all).
 */
const MiB = 1024 * 1024;
const HUGE = 100 * MiB;
let world: GatewayWorld;
let codeHost: Server;
let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
let agent: Client;
let grantId: string;
/** Per answer kind: bytes the code host managed to hand its socket, and whether the reader hung up first. */
const sent: Record<string, { bytes: number; cutOff: boolean }> = {};

/** Writes `total` bytes of a JSON document as fast as the reader takes them, stopping if it hangs up. */
async function stream(kind: string, res: ServerResponse, total: number) {
  const record = { bytes: 0, cutOff: false };
  sent[kind] = record;
  res.on('close', () => {
    if (!res.writableFinished) record.cutOff = true;
  });
  const chunk = Buffer.alloc(MiB, 'a');
  res.write('{"content":"');
  while (record.bytes < total && !record.cutOff) {
    record.bytes += chunk.length;
    if (!res.write(chunk))
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done).off('close', done);
          resolve();
        };
        res.on('drain', done).on('close', done);
      });
  }
  if (!record.cutOff) res.end('"}');
}

beforeAll(async () => {
  world = await gatewayWorld();
  codeHost = createServer((req, res) => {
    const repository = /^\/repos\/acme\/([^/]+)\//.exec(req.url ?? '')?.[1];
    switch (repository) {
      case 'huge':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        return void stream('huge', res, HUGE);
      case 'declared-huge':
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(HUGE + 14) });
        return void stream('declared-huge', res, HUGE);
      case 'silent':
        return; // never answers
      case 'trickle': {
        // Headers at once, then a byte every 200 ms: the deadline covers the body too.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const timer = setInterval(() => res.write(' '), 200);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case 'garbage':
        res.writeHead(200, { 'Content-Type': 'text/html' });
        return void res.end('<html><body>Rate limited, try later</body></html>');
      default:
        res.writeHead(200, { 'Content-Type': 'application/json' });
        return void res.end(JSON.stringify({ content: 'fine' }));
    }
  });
  await new Promise<void>((resolve) => codeHost.listen(0, '127.0.0.1', resolve));
  const config = configFor(world, {
    upstream: {
      builtin: 'github',
      apiUrl: `http://127.0.0.1:${(codeHost.address() as AddressInfo).port}`,
      tokenEnv: 'CODE_HOST_TOKEN',
      credential: false,
    },
    tools: githubToolMappings(),
    // Long enough that reading to the byte bound ends first on a loaded machine; short enough
    // that the deadline tests show it is the configured one, not a fixed 10 s.
    callTimeoutMs: 3_000,
  });
  gateway = await startHttpGateway(world, config, undefined, { CODE_HOST_TOKEN: 'ghs_local' });
  grantId = await grantOn(world, await connectionFor(world, config), { tools: ['repos.read_file'], budget: { calls: 100 } });
  agent = await httpAgent(gateway.url, world.agent.token, grantId);
});
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  codeHost?.closeAllConnections();
  await new Promise((resolve) => codeHost?.close(resolve));
  await world.service.close();
});

const read = (repository: string) => call(agent, 'repos.read_file', { repository: `acme/${repository}`, path: 'README.md' });

it('a well-behaved answer is the result', async () => {
  const fine = await read('fine');
  expect(fine.isError).toBeFalsy();
  expect(JSON.parse(text(fine))).toEqual({ content: 'fine' });
});

it.each([
  ['streams 100 MiB', 'huge'],
  ['declares 100 MiB', 'declared-huge'],
])('a code host that %s: refused at the byte bound, its connection closed, a failed outcome', async (_case, repository) => {
  const result = await read(repository);
  expect(result).toMatchObject({ isError: true, structuredContent: { reason: 'upstream_too_large' } });
  expect(JSON.stringify(result).length).toBeLessThan(1_000);
  // The gateway hung up: the code host could not hand over more than the bound and what sockets buffer.
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(sent[repository]!.cutOff).toBe(true);
  expect(sent[repository]!.bytes).toBeLessThan(32 * MiB);
  expect((await trail(world, grantId)).items.at(-1)).toMatchObject({ tool: 'repos.read_file', outcome: 'failed' });
});

it.each([
  ['never answers', 'silent'],
  ['trickles its body past the deadline', 'trickle'],
])('a code host that %s: upstream_timeout within callTimeoutMs, not a fixed 10 s', async (_case, repository) => {
  const started = Date.now();
  const result = await read(repository);
  const took = Date.now() - started;
  expect(result).toMatchObject({ isError: true, structuredContent: { reason: 'upstream_timeout' } });
  expect(took).toBeGreaterThanOrEqual(2_900);
  expect(took).toBeLessThan(8_000);
  expect((await trail(world, grantId)).items.at(-1)).toMatchObject({ tool: 'repos.read_file', outcome: 'failed' });
});

it('a 200 whose body is not JSON is a failure, not an empty success', async () => {
  const result = await read('garbage');
  expect(result).toMatchObject({ isError: true, structuredContent: { reason: 'upstream_invalid_answer' } });
  expect(JSON.stringify(result)).not.toContain('Rate limited');
  expect((await trail(world, grantId)).items.at(-1)).toMatchObject({ tool: 'repos.read_file', outcome: 'failed' });
});
