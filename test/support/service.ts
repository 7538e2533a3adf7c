import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config';
import type { Clock } from '../../src/kernel/clock';
import { createLogger } from '../../src/kernel/log';
import { DECISION_WRITE_DELAY_MS } from '../../src/policy/decision-log';
import { buildService } from '../../src/composition';
import { createHttpServer } from '../../src/http/server';

export interface TestService {
  http: ReturnType<typeof request>;
  /** `http://127.0.0.1:<port>`: for clients other than supertest (raw sockets, fetch, SDKs). */
  baseUrl: string;
  deps: Awaited<ReturnType<typeof buildService>>['infrastructure'];
  services: Awaited<ReturnType<typeof buildService>>['services'];
  config: Config;
  /** The metrics app of METRICS_PORT, when configured (listening on a port of its own). */
  metricsHttp?: ReturnType<typeof request>;
  /** Every log line the service wrote, as raw JSON text (for "nothing secret is logged" tests). */
  logs: string[];
  close(): Promise<void>;
}

/**
 * A real service (real Postgres database of this run, real Redis with this run's prefix, the
 * compiled policy module), exercised over HTTP with supertest.
 */
export async function startService(
  overrides: Record<string, string> = {},
  options: { clock?: Clock; spanExporter?: SpanExporter } = {},
): Promise<TestService> {
  const config = loadConfig({ ...process.env, POLICY_WATCH: 'false', LOG_LEVEL: 'debug', ...overrides });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      // A write may carry several lines (decision events are written in batches).
      for (const line of String(chunk).split('\n')) if (line) logs.push(line);
      done();
    },
  });
  const service = await buildService(config, {
    logger: createLogger(config.LOG_LEVEL, sink),
    clock: options.clock,
    spanExporter: options.spanExporter,
  });
  const server = createHttpServer(service.app).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const metricsServer = service.metricsApp && createHttpServer(service.metricsApp).listen(0, '127.0.0.1');
  return {
    http: request(server),
    baseUrl: `http://127.0.0.1:${port}`,
    metricsHttp: metricsServer && request(metricsServer),
    deps: service.infrastructure,
    services: service.services,
    config,
    logs,
    async close() {
      if (metricsServer) await new Promise((resolve) => metricsServer.close(resolve));
      await new Promise((resolve) => server.close(resolve));
      await service.close();
    },
  };
}

/**
 * Resolves once the decision events queued so far are in the logs: they wait
 * DECISION_WRITE_DELAY_MS to share a write, and a timer set later for longer fires after theirs.
 */
export function decisionsWritten(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, DECISION_WRITE_DELAY_MS + 1));
}

let counter = 0;
/** A fresh human user id, unique across test files and runs. */
export function newUserId(label = 'user'): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

/** A human JWT signed with the configured development secret. */
export function humanToken(config: Config, sub: string, options: jwt.SignOptions = {}): string {
  return jwt.sign({}, config.JWT_SECRET, { algorithm: 'HS256', subject: sub, expiresIn: '1h', ...options });
}

export function bearer(token: string): { Authorization: string } {
  return { Authorization: `Bearer ${token}` };
}

/** What a test file's service starts with: the settings it overrides, and a clock it drives. */
export interface ServiceSettings {
  overrides?: Record<string, string>;
  clock?: Clock;
}

/**
 * An object that stands for one made later, in `beforeAll`: each use reaches the real one, and a
 * use before it exists fails with its name rather than with `undefined`.
 */
function standIn<T extends object>(name: string): { proxy: T; bind(value: T): void; current(): T | undefined } {
  let target: T | undefined;
  const real = (): T => {
    if (!target) throw new Error(`the test's ${name} is used before beforeAll made it`);
    return target;
  };
  const proxy = new Proxy({} as T, {
    get: (_, key) => Reflect.get(real(), key),
    has: (_, key) => Reflect.has(real(), key),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(real(), key);
      return descriptor && { ...descriptor, configurable: true };
    },
  });
  return { proxy, bind: (value) => void (target = value), current: () => target };
}

/**
 * A real service for the tests of one file, with the world `makeWorld` builds in it through the
 * API: started before the file's tests (`beforeAll`), closed after them. Settings are read then,
 * so they may name what the file makes before its tests run.
 */
export function startedServiceWith<W extends object>(
  makeWorld: (service: TestService) => Promise<W>,
  settings: ServiceSettings | (() => ServiceSettings) = {},
): { service: TestService; world: W } {
  const service = standIn<TestService>('service');
  const world = standIn<W>('world');
  beforeAll(async () => {
    const { overrides, clock } = typeof settings === 'function' ? settings() : settings;
    const started = await startService(overrides, { clock });
    service.bind(started);
    world.bind(await makeWorld(started));
  });
  afterAll(() => service.current()?.close());
  return { service: service.proxy, world: world.proxy };
}

/** A real service for the tests of one file, started before them and closed after. */
export function startedService(settings: ServiceSettings | (() => ServiceSettings) = {}): TestService {
  return startedServiceWith(async () => ({}), settings).service;
}
