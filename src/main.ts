import { createServer } from 'node:http';
import { ConfigError, loadConfig } from './config';
import { createLogger } from './log';
import { buildService } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  const service = await buildService(config, { logger: log });
  const server = createServer(service.app.callback());
  server.keepAliveTimeout = 65_000;
  server.listen(config.PORT, config.HOST, () => log.info({ port: config.PORT, host: config.HOST }, 'listening'));

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
    server.close(async () => {
      await service.close();
      log.info('stopped');
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => void service.deps.policy.reload());
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error(error);
  }
  process.exit(1);
});
