import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../support/replica';
import { once } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * Graceful shutdown of the built service (`npm start`): on SIGTERM it stops taking connections,
 * lets an in-flight request (a long poll here) finish with its full answer, then exits 0.
 */
const run = promisify(execFile);
const dist = path.resolve(__dirname, '../../dist/src');

async function waitUntilReady(base: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const ready = await fetch(`${base}/readyz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the service did not become ready');
}

let child: ChildProcess | undefined;
afterEach(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

it('finishes an in-flight request after SIGTERM, refuses new ones, and exits 0', async () => {
  const { stdout } = await run(process.execPath, [path.join(dist, 'admin/cli.js'), 'demo', '--json'], { timeout: 20_000 });
  const agentToken: string = JSON.parse(stdout).agent.token;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, [path.join(dist, 'main.js')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', POLICY_WATCH: 'false' },
    stdio: 'ignore',
  });
  const exited = once(child, 'exit');
  await waitUntilReady(base);
  // The demo world's agent has an event coming (the approval its write waits on), which the
  // service's outbox relay delivers after start: wait for it and acknowledge it, so the long poll
  // below has nothing to return early with.
  const auth = { Authorization: `Bearer ${agentToken}` };
  const waiting = (await (await fetch(`${base}/api/agents/runtime/events?waitMs=10000`, { headers: auth })).json()) as {
    items: Array<{ id: string; type: string }>;
  };
  expect(waiting.items.map((event) => event.type)).toContain('approval.requested');
  for (const event of waiting.items) await fetch(`${base}/api/agents/runtime/events/${event.id}/ack`, { method: 'POST', headers: auth });

  const started = Date.now();
  const longPoll = fetch(`${base}/api/agents/runtime/events?waitMs=2000`, { headers: { Authorization: `Bearer ${agentToken}` } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 200));

  const refused = await fetch(`${base}/healthz`).then(
    () => 'answered',
    () => 'refused',
  );
  expect(refused).toBe('refused');
  const res = await longPoll;
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ items: [], nextCursor: null });
  expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  const [code] = await exited;
  expect(code).toBe(0);
});

it('runs WORKERS replicas behind one port and stops them all on SIGTERM', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, [path.join(dist, 'main.js')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', POLICY_WATCH: 'false', WORKERS: '2' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += String(chunk)));
  const exited = once(child, 'exit');
  await waitUntilReady(base);
  // Both workers come up and listen (each logs it); the port answers.
  for (let attempt = 0; attempt < 50 && (output.match(/"listening"/g) ?? []).length < 2; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pids = new Set([...output.matchAll(/"pid":(\d+)[^\n]*"msg":"listening"/g)].map((m) => m[1]));
  expect(pids.size).toBe(2);
  child.kill('SIGTERM');
  const [code] = await exited;
  expect(code).toBe(0);
  for (const pid of pids) expect(() => process.kill(Number(pid), 0)).toThrow();
});
