// A deliberately broken MCP server over stdio, written by hand (no SDK) so it can misbehave in ways
// a real SDK would not let it: it initializes and lists its tools properly, then `crash` exits in
// the middle of the call, `garbage` answers a line that is not JSON-RPC and never the real answer,
// `hang` never answers, and `fine` answers properly (to show the gateway recovers).
import { createInterface } from 'node:readline';

const tools = ['crash', 'garbage', 'hang', 'fine'].map((name) => ({
  name,
  description: `Misbehaves: ${name}`,
  inputSchema: { type: 'object', properties: { note: { type: 'string' } }, additionalProperties: false },
}));
const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'initialize')
    return send({
      id: message.id,
      result: {
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'broken', version: '1' },
      },
    });
  if (message.method === 'tools/list') return send({ id: message.id, result: { tools } });
  if (message.method !== 'tools/call') return message.id === undefined ? undefined : send({ id: message.id, result: {} });
  switch (message.params.name) {
    case 'crash':
      process.stdout.write('{"jsonrpc":"2.0","id":');
      return process.exit(3);
    case 'garbage':
      process.stdout.write('this is not JSON-RPC\n');
      return send({ id: message.id, result: { content: 'not an array of content blocks' } });
    case 'hang':
      return undefined;
    default:
      return send({ id: message.id, result: { content: [{ type: 'text', text: 'fine' }] } });
  }
});
