// What every benchmark script shares: a throwaway database and Redis key prefix, the built service
// started on a free port, an API helper, and clean-up. Env: BENCH_DATABASE_BASE_URL
// (postgres://postgres@127.0.0.1:5432/), REDIS_URL (redis://127.0.0.1:6379/0).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '..');
export const require = createRequire(import.meta.url);
const jwt = require('jsonwebtoken');
const { Redis } = require('ioredis');

const DB_BASE = process.env.BENCH_DATABASE_BASE_URL ?? 'postgres://postgres@127.0.0.1:5432/';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
export const run = randomBytes(4).toString('hex');
export const DATABASE_URL = `${DB_BASE}gb_bench_${run}`;
export const REDIS_KEY_PREFIX = `gbbench:${run}:`;

if (!existsSync(path.join(root, 'dist/src/main.js')) || !existsSync(path.join(root, 'build/policy/policy.wasm'))) {
  console.log('building (dist/ or build/policy/ missing)...');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
}
const { createDatabase, ensureDatabaseExists, migrateToLatest } = require(path.join(root, 'dist/src/db/database.js'));
export const { registerBroker } = require(path.join(root, 'dist/src/admin/brokers.js'));

/** The HS256 secret of this run's services (each is given it), which humanToken signs with. */
const BENCH_JWT_SECRET = randomBytes(32).toString('base64url');

const children = [];
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function waitFor(url) {
  for (let i = 0; i < 200; i += 1) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not come up`);
}

export function start(command, args, env = {}) {
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', process.env.BENCH_SERVICE_STDOUT ? openSync(process.env.BENCH_SERVICE_STDOUT, 'a') : 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

/**
 * The Node pinned in tools/node/package.json (installed by `scripts/ensure-deps.sh
 * --with-test-node`): the test command's second Node, and the release line the Docker image ships.
 * `env` puts it first on a service's PATH; undefined when it is not installed.
 */
export function pinnedNode() {
  const bin = path.join(root, 'tools/node/node_modules/.bin');
  if (!existsSync(path.join(bin, 'node'))) return undefined;
  const version = execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' }).trim();
  return { version, env: { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` } };
}

/** Databases made by benchDatabase beyond the first (their handles), dropped by `finish`. */
const extraDatabases = new Map();

/**
 * The throwaway database, migrated; the caller destroys it through `finish`. `suffix`: another one
 * of this run beside it (its URL is DATABASE_URL + suffix), its handle destroyed by `finish` too.
 */
export async function benchDatabase(suffix = '') {
  const url = `${DATABASE_URL}${suffix}`;
  await ensureDatabaseExists(url);
  const db = createDatabase(url, 4);
  if (suffix) extraDatabases.set(suffix, db);
  await migrateToLatest(db);
  return db;
}

/**
 * The flags the service runs with where it ships (the Dockerfile, docker-compose.yml, `npm start`):
 * the bench measures what a deployment runs. BENCH_SERVICE_NODE_ARGS replaces them (`none`: V8's
 * defaults), for a before/after of the flags themselves.
 */
const SERVICE_NODE_ARGS =
  process.env.BENCH_SERVICE_NODE_ARGS === 'none' ? [] : (process.env.BENCH_SERVICE_NODE_ARGS?.split(' ') ?? ['--max-semi-space-size=32']);

/** The built service (or `main`, another build's) on a free port, on the throwaway database and Redis prefix. */
export async function startService(env = {}, nodeArgs = [], main = 'dist/src/main.js') {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = start(
    'node',
    [...SERVICE_NODE_ARGS, ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), ...nodeArgs, main],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL,
      REDIS_URL,
      REDIS_KEY_PREFIX,
      NODE_ENV: 'development',
      JWT_SECRET: BENCH_JWT_SECRET,
      LOG_LEVEL: 'warn',
      POLICY_WATCH: 'false',
      ...env,
    },
  );
  await waitFor(`${base}/healthz`);
  services.set(base, child);
  return base;
}

const services = new Map();

/** Sends a signal to a service started by startService (SIGUSR2: the phase timer starts over). */
export function signalService(base, signal) {
  services.get(base)?.kill(signal);
}

/**
 * CPU time (user + system, ms) the service process has used so far, from /proc (Linux). Divided by
 * the checks it answered, it is the cost of one check: a figure that, unlike throughput, holds on
 * a machine whose cores are shared with the load generator, Postgres and Redis.
 */
export function serviceCpuMs(base) {
  return processCpuMs(services.get(base)?.pid);
}

/** The process id of a service started by startService. */
export function servicePid(base) {
  return services.get(base)?.pid;
}

/** CPU time (user + system, ms) of any process so far, from /proc (Linux); NaN once it is gone. */
export function processCpuMs(pid) {
  if (!pid || !existsSync(`/proc/${pid}/stat`)) return NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat(5), counted from the state field (3) here.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * Stops a service started by startService and waits for it to exit. Each holds a pool of
 * Postgres connections: past Postgres's max_connections (100 by default) the next service's
 * checks would queue for a connection and fail, and that is not what a benchmark should measure.
 */
export async function stopService(base) {
  const child = services.get(base);
  services.delete(base);
  if (!child || child.exitCode !== null) return;
  await new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}

export function humanToken(subject) {
  return jwt.sign({}, BENCH_JWT_SECRET, { algorithm: 'HS256', subject, expiresIn: '2h' });
}

export async function api(base, method, url, token, body) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function machine() {
  const cores = cpus();
  return `${cores.length} x ${cores[0]?.model ?? 'cpu'}, node ${process.version}`;
}

/** Stops what was started, drops the database and the Redis keys of this run. */
export async function finish(db) {
  for (const child of children) child.kill('SIGTERM');
  await sleep(300);
  await db?.destroy();
  for (const extra of extraDatabases.values()) await extra.destroy();
  const url = new URL(DATABASE_URL);
  url.pathname = '/postgres';
  const knex = require('knex');
  const admin = knex({ client: 'pg', connection: url.toString(), pool: { min: 0, max: 1 } });
  try {
    for (const suffix of ['', ...extraDatabases.keys()]) {
      await admin.raw('drop database if exists ?? with (force)', [`gb_bench_${run}${suffix}`]);
    }
  } finally {
    await admin.destroy();
  }
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${REDIS_KEY_PREFIX}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export function killChildren() {
  for (const child of children) child.kill('SIGTERM');
}
