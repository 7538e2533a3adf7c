import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { callRecord } from '../support/call-records';
import {
  call,
  configFor,
  connectionFor,
  EVERYTHING,
  GATEWAY_MAIN,
  gatewayWorld,
  grantOn,
  httpAgent,
  trail,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The gateway reports outcomes in batches after the agent has its answer. A gateway process that
 * dies holds what it has not had acknowledged: an outcome the grant broker acknowledged is durable
 * and stays; one queued, or in a batch sent but not answered, is never recorded by it, and its
 * record stays `pending` (allowed, outcome unknown), as for any broker that never reported. A
 * gateway that is stopped (SIGTERM) sends what it holds before it ends.
 */
let world: GatewayWorld;
let proxy: TcpProxy;
const gateways: ChildProcess[] = [];
beforeAll(async () => {
  world = await gatewayWorld();
  // Between the gateway and the grant broker: a partition holds the bytes of a batch on the way.
  proxy = await startTcpProxy(Number(new URL(world.service.baseUrl).port));
});
afterAll(async () => {
  for (const child of gateways) child.kill('SIGKILL');
  await proxy.close();
  await world.service.close();
});

/** The built gateway as its own process, in front of server-everything over stdio, reaching the broker through the proxy. */
async function startGateway(outcomeBatchMs: number) {
  const config = configFor(world, {
    upstream: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    tools: { echo: { grantTool: 'everything.echo', access: 'read' } },
  });
  const connectionId = await connectionFor(world, config);
  const grantId = await grantOn(world, connectionId, { tools: ['everything.echo'] });
  const folder = mkdtempSync(path.join(tmpdir(), 'gateway-batches-'));
  const file = path.join(folder, 'gateway.json');
  writeFileSync(file, JSON.stringify({ ...config, brokerUrl: proxy.url('http'), outcomeBatchMs, listen: { port: 0, host: '127.0.0.1' } }));
  const child = spawn(process.execPath, [GATEWAY_MAIN, '--config', file], {
    env: { PATH: process.env.PATH ?? '', GATEWAY_BROKER_TOKEN: world.brokerToken },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  gateways.push(child);
  let said = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const match = /agents at (\S+)/.exec(said);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}): ${said}`)));
  });
  const agent = await httpAgent(url, world.agent.token, grantId);
  return { child, agent, grantId, said: () => said };
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));

it('a gateway killed mid-batch loses no acknowledged outcome; the unacknowledged stay pending', async () => {
  const { child, agent, grantId } = await startGateway(300);
  expect((await call(agent, 'echo', { message: 'first' })).isError).toBeFalsy();
  // Acknowledged: the batch came back from the grant broker, the record is complete.
  expect((await trail(world, grantId)).outcomes).toEqual(['everything.echo:succeeded']);

  const answered = [await call(agent, 'echo', { message: 'second' }), await call(agent, 'echo', { message: 'third' })];
  expect(answered.map((result) => result.isError ?? false)).toEqual([false, false]);
  // The agent has both answers; their outcomes are held. The partition catches their batch on the way.
  proxy.cut();
  try {
    await new Promise((resolve) => setTimeout(resolve, 900));
    child.kill('SIGKILL');
    await exited(child);
    await agent.close().catch(() => undefined);
    // Read before the partition heals: healing it hands on the bytes it held, and the dead
    // gateway's batch would still arrive if the proxy has not yet seen that connection close.
    const { items } = await trail(world, grantId, 0);
    expect(items.map((item) => `${item.tool}:${item.outcome}:${item.reason}`)).toEqual([
      'everything.echo:succeeded:allowed',
      'everything.echo:pending:allowed',
      'everything.echo:pending:allowed',
    ]);
  } finally {
    proxy.restore();
  }
});

it('a gateway stopped with SIGTERM sends the outcomes it holds before it ends', async () => {
  // A window far longer than the test: only the stop can send them.
  const { child, agent, grantId, said } = await startGateway(10_000);
  for (const message of ['one', 'two']) expect((await call(agent, 'echo', { message })).isError).toBeFalsy();
  expect((await trail(world, grantId, 0)).outcomes).toEqual(['everything.echo:pending', 'everything.echo:pending']);
  child.kill('SIGTERM');
  await exited(child);
  await agent.close().catch(() => undefined);
  const { items } = await trail(world, grantId, 0);
  expect(items.map((item) => item.outcome)).toEqual(['succeeded', 'succeeded']);
  for (const item of items as Array<{ id?: string }>)
    expect(await callRecord(world.service.deps.db, item.id!)).toMatchObject({ outcome: 'succeeded' });
  // What it said names no argument.
  expect(said()).not.toMatch(/one|two/);
});
