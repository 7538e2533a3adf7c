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
