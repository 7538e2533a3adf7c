/**
 * `mcp-gateway --config FILE`: agents over streamable HTTP when the config has `listen`, else one
 * agent over stdio (GRANT_ID, AGENT_TOKEN). `mcp-gateway connection-tools --config FILE` prints
 * the `tools` to register the connection with. stdout may carry the MCP protocol, so everything
 * this process says goes to stderr; tokens come from the environment and are never printed.
 */
import { ConfigError, connectionTools, loadConfig } from './config';
import { createGatewayCore, serveHttp, serveStdio } from './gateway';
import { startTracing } from './tracing';

async function main(argv: string[]): Promise<void> {
  const command = argv[0] === 'connection-tools' ? argv.shift() : undefined;
  const at = argv.indexOf('--config');
  const file = at >= 0 ? argv[at + 1] : undefined;
  if (!file) throw new Error('usage: mcp-gateway [connection-tools] --config FILE');
  const config = loadConfig(file);
  if (command === 'connection-tools') {
    process.stdout.write(`${JSON.stringify(connectionTools(config), null, 2)}\n`);
    // The one kind a grant can be made on: a connection of another kind is stored, then every grant on it is refused.
    process.stderr.write(
      'mcp-gateway: register these as the tools of a code_hosting_app connection: POST /api/connections ' +
        '{"kind": "code_hosting_app", "brokerId": "<this gateway\'s broker>", "externalInstallationId": "<any id of yours>", "tools": <the above>}\n',
    );
    return;
  }
  const stopTracing = startTracing(process.env);
  const core = createGatewayCore(config, { onClose: stopTracing });
  if (config.listen) {
    const listener = await serveHttp(core, config.listen);
    process.stderr.write(`mcp-gateway: agents at ${listener.url()}\n`);
    // The sessions first (no new call), then the outcomes still held are sent before the process ends.
    const stop = () =>
      void Promise.all([listener.close(), core.upstream.close()])
        .then(() => core.close())
        .finally(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    return;
  }
  const grantId = process.env.GRANT_ID;
  const agentToken = process.env.AGENT_TOKEN;
  if (!grantId || !agentToken) throw new Error('set GRANT_ID and AGENT_TOKEN (or give the config a "listen")');
  await serveStdio(core, { grantId, agentToken });
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `mcp-gateway: ${error instanceof ConfigError ? `invalid config ${error.message}` : error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
