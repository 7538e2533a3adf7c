import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config';
import { createLogger } from './kernel/log';
import { createHttpServer } from './http/server';
import { buildService } from './composition';
import { startExtAuthzGrpc } from './protocols/ext-authz/grpc';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  const service = await buildService(config, { logger: log });
  const server = createHttpServer(service.app);
  server.listen(config.PORT, config.HOST, () => log.info({ port: config.PORT, host: config.HOST, pid: process.pid }, 'listening'));
  const metricsServer = service.metricsApp && createHttpServer(service.metricsApp);
  metricsServer?.listen(config.METRICS_PORT, config.METRICS_HOST, () =>
    log.info({ port: config.METRICS_PORT, host: config.METRICS_HOST }, 'metrics listening'),
  );
  const extAuthzGrpc =
    config.EXT_AUTHZ_GRPC_PORT === undefined
      ? undefined
      : await startExtAuthzGrpc(service.services.extAuthz, { host: config.HOST, port: config.EXT_AUTHZ_GRPC_PORT }, log);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    const deadline = setTimeout(() => {
      log.warn('shutdown deadline reached; closing remaining connections');
      server.closeAllConnections();
    }, config.SHUTDOWN_TIMEOUT_MS);
    deadline.unref();
    metricsServer?.close();
    const grpcClosed = extAuthzGrpc?.close();
    server.close(async () => {
      await grpcClosed;
      await service.close();
      log.info('stopped');
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => void service.infrastructure.policy.reload());
}

/**
 * WORKERS > 1 forks that many processes sharing the port. Each is a full replica (its own caches,
 * batched call trail and policy module); the Redis version keys keep them consistent exactly as
 * they keep separate hosts consistent. The primary only forwards signals and reports exits.
 */
function supervise(workers: number): void {
  for (let i = 0; i < workers; i += 1) cluster.fork();
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (signal !== 'SIGHUP') stopping = true;
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    });
  }
  cluster.on('exit', (worker, code) => {
    if (!stopping) console.error(`worker ${worker.process.pid} exited with ${code}; stopping the service`);
    const alive = Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
    if (!stopping) for (const other of alive) other?.process.kill('SIGTERM');
    if (alive.length === 0) process.exit(stopping ? 0 : 1);
  });
}

function start(): void {
  let workers = 1;
  try {
    workers = loadConfig().WORKERS;
  } catch {
    // main() reports the configuration error.
  }
  if (workers > 1 && cluster.isPrimary) {
    supervise(workers);
    return;
  }
  main().catch(fail);
}

function fail(error: unknown): void {
  if (error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error(error);
  }
  process.exit(1);
}

start();
