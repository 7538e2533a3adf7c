/**
 * The reference MCP broker: the gateway (gateway/) in front of its built-in GitHub connector, for
 * one agent over stdio. Configuration comes from the environment; tokens are read from it and never
 * printed. stdout carries the MCP protocol, so anything this process says goes to stderr.
 */
import { parseConfig } from '../../gateway/src/config';
import { createGatewayCore, serveStdio } from '../../gateway/src/gateway';
import { githubToolMappings } from '../../gateway/src/github/tools';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (see examples/mcp-broker/README.md)`);
  return value;
}

async function main(): Promise<void> {
  required('CONNECTOR_TOKEN');
  const config = parseConfig({
    brokerUrl: process.env.GRANT_BROKER_URL ?? 'http://127.0.0.1:8080',
    brokerTokenEnv: 'BROKER_TOKEN',
    upstream: { builtin: 'github', apiUrl: required('CONNECTOR_URL'), tokenEnv: 'CONNECTOR_TOKEN' },
    tools: githubToolMappings(),
  });
  const core = createGatewayCore(config);
  await serveStdio(core, { grantId: required('GRANT_ID'), agentToken: required('AGENT_TOKEN') });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
