/**
 * The MCP broker over stdio: an MCP client (an agent's host) starts it as a process. Configuration
 * comes from the environment; tokens are read from it and never printed. stdout carries the MCP
 * protocol, so anything this process says goes to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CodeHostConnector } from './connector';
import { createMcpBroker } from './server';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (see examples/mcp-broker/README.md)`);
  return value;
}

async function main(): Promise<void> {
  const server = createMcpBroker({
    brokerUrl: process.env.GRANT_BROKER_URL ?? 'http://127.0.0.1:8080',
    brokerToken: required('BROKER_TOKEN'),
    grantId: required('GRANT_ID'),
    subjectToken: required('AGENT_TOKEN'),
    connector: new CodeHostConnector(required('CONNECTOR_URL'), required('CONNECTOR_TOKEN')),
  });
  await server.connect(new StdioServerTransport());
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
