import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import request from 'supertest';

/**
 * The built service (dist/src/main.js) as a separate process on this run's database and Redis
 * prefix: a replica that can be killed with SIGKILL, as a crashed host would be.
 */
export interface Replica {
  http: ReturnType<typeof request>;
  baseUrl: string;
  /** stderr of the process, for a test that fails. */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Ports handed out by spareServerPort in this process, so two servers of one test never share one. */
const handedOut = new Set<number>();

/**
 * A port for a server a test starts itself (redis-server, a cluster's bus), below the kernel's
 * ephemeral range (32768 and up): a port from listen(0) is ephemeral, so between its release and
 * the server's bind an outgoing connection of any test (a pg or Redis client) may take it, and the
 * server then fails with EADDRINUSE. Randomised so parallel jest workers rarely meet; callers that
 * start a server still retry on another port if it loses a race.
 */
export async function spareServerPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (!free) continue;
    handedOut.add(port);
    return port;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function startReplica(env: Record<string, string> = {}): Promise<Replica> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  let stderr = '';
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, '../../dist/src/main.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), POLICY_WATCH: 'false', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (chunk) => (stderr += String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  for (let attempt = 0; ; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`replica exited during start: ${stderr}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (attempt > 200) throw new Error(`replica did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    http: request(baseUrl),
    baseUrl,
    output: () => stderr,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
  };
}
