import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { spareServerPort } from './replica';

/**
 * A real Redis Cluster of this test alone: three masters (`redis-server --cluster-enabled yes`) on
 * spare ports, joined by `redis-cli --cluster create`, without persistence. A node can be killed
 * and started again on its port with its nodes.conf, so it rejoins (empty, like a real node that
 * lost its memory). The shared Redis on 6379 is never touched.
 */
export interface RedisCluster {
  /** For REDIS_CLUSTER_NODES. */
  nodes: string;
  ports: number[];
  /** The node that serves `key`'s slot (the key as Redis sees it, prefix included). */
  portOf(key: string): Promise<number>;
  kill(port: number): Promise<void>;
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

const run = promisify(execFile);
const cli = (port: number, ...args: string[]) => run('redis-cli', ['-p', String(port), ...args], { timeout: 10_000 });

export async function startRedisCluster(size = 3): Promise<RedisCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  const busPorts = new Map<number, number>();

  /** Starts a node on `port`; false when it exited first (a port lost to a race), with its output. */
  async function start(port: number): Promise<boolean> {
    const busPort = busPorts.get(port) ?? (await spareServerPort());
    let output = '';
    const child = spawn(
      'redis-server',
      [
        ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        ...['--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-node-timeout', '1000'],
        ...['--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--dir', dir],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (chunk) => (output += String(chunk)));
    child.stderr?.on('data', (chunk) => (output += String(chunk)));
    children.set(port, child);
    try {
      await until(async () => {
        if (child.exitCode !== null) throw new Exited();
        return (await cli(port, 'PING')).stdout.trim() === 'PONG';
      }, `redis-server on ${port}`);
    } catch (err) {
      children.delete(port);
      if (err instanceof Exited) return false;
      child.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${output}`);
    }
    busPorts.set(port, busPort);
    return true;
  }

  /** A new node on a spare port, trying other ports when one is taken between choice and bind. */
  async function startNew(): Promise<number> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const port = await spareServerPort();
      if (await start(port)) return port;
    }
    throw new Error('redis-server: no spare port could be bound in 5 attempts');
  }

  async function clusterOk(): Promise<void> {
    for (const port of ports) {
      await until(async () => (await cli(port, 'CLUSTER', 'INFO')).stdout.includes('cluster_state:ok'), `cluster state on ${port}`);
    }
  }

  const ports = await Promise.all(Array.from({ length: size }, startNew));
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
    timeout: 30_000,
  });
  await clusterOk();

  async function kill(port: number): Promise<void> {
    const child = children.get(port);
    children.delete(port);
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  return {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    ports,
    async portOf(key) {
      const live = [...children.keys()];
      const slot = Number((await cli(live[0]!, 'CLUSTER', 'KEYSLOT', key)).stdout.trim());
      for (const port of live) {
        const own = (await cli(port, 'CLUSTER', 'NODES')).stdout.split('\n').find((line) => line.includes('myself')) ?? '';
        if (ownsSlot(own, slot)) return port;
      }
      throw new Error(`no live node owns slot ${slot}`);
    },
    kill,
    async restart(port) {
      if (!(await start(port))) throw new Error(`redis-server on ${port} could not start again on its port`);
      await clusterOk();
    },
    async stop() {
      await Promise.all([...children.keys()].map(kill));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A CLUSTER NODES line's slot ranges (fields 9 on): "0-5460", "5461". */
function ownsSlot(line: string, slot: number): boolean {
  return line
    .split(' ')
    .slice(8)
    .some((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return slot >= from! && slot <= to!;
    });
}

class Exited extends Error {}

async function until(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    if (
      await ok().catch((err: unknown) => {
        if (err instanceof Exited) throw err;
        return false;
      })
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what}: not ready after 10 s`);
}
