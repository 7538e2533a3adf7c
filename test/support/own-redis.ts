import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spareServerPort } from './replica';

/**
 * A throwaway redis-server of this test alone, on a free port, with no persistence: tests that
 * stop Redis stop this one, never the shared server on 6379. A service on it runs on a database of
 * its own too (`ownDatabase(...).migrated()`): replicas of one deployment share Postgres and Redis,
 * and a service sharing the run's database would relay other files' invalidations to its own
 * Redis, deleting them from the outbox before the run's replicas could stamp them.
 */
export interface OwnRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(200);
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
  });
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await spareServerPort();
  const dir = mkdtempSync(path.join(tmpdir(), 'own-redis-'));
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    // Its own directory: a test may turn persistence on, and its files must not land in the repository.
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i += 1) {
      if (await answersPing(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server on port ${port} did not start`);
  }

  async function stop(): Promise<void> {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  }

  await start();
  return { url: `redis://127.0.0.1:${port}/0`, port, stop, start };
}
