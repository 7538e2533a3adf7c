// An MCP host as the tests need one to die: it starts the command after `--` as its stdio MCP
// server, then waits to be killed. `pipe`: the host owns the server's stdin and stdout (as a
// desktop host does), initializes it, lists its tools and writes `READY` to its own stdout.
// `inherit`: the server shares the host's stdin and stdout, so whoever started the host speaks MCP
// to the server directly and keeps its stdin open after the host is gone.
const { spawn } = require('node:child_process');
const { createInterface } = require('node:readline');

const [mode, , command, ...args] = process.argv.slice(2);
const server = spawn(command, args, { stdio: mode === 'inherit' ? 'inherit' : ['pipe', 'pipe', 'inherit'] });
setInterval(() => undefined, 60_000);
if (mode === 'pipe') {
  const send = (message) => server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  createInterface({ input: server.stdout }).on('line', (line) => {
    const { id } = JSON.parse(line);
    if (id === 1) {
      send({ method: 'notifications/initialized' });
      send({ id: 2, method: 'tools/list', params: {} });
    } else if (id === 2) process.stdout.write('READY\n');
  });
  send({
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'dying-host', version: '1' } },
  });
}
