// The floor of bench:gateway: what one Node hop costs on this machine. A bare reverse proxy
// (node:http and an undici keep-alive pool) that does only what the gateway must do on a call's
// path: for a `tools/call` it sends the grant broker's check (one POST on a kept-alive socket) and,
// on allow, forwards the request to the upstream and streams the answer back unparsed; everything
// else (the session's initialize, its GET stream, its DELETE) is forwarded as it is. No argument
// validation, no MCP parsing of the answer, no outcome report, no SDK: whatever the gateway adds
// beyond this proxy's figures is its own, whatever this proxy adds is the hop's.
// Run by bench-gateway.mjs: node bench-gateway-floor.mjs <port> <upstream MCP URL> <service base URL> <grant tool>
// with FLOOR_BROKER_TOKEN (the gateway's broker token) in the environment.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Agent } = require('undici');

const [port, upstreamUrl, serviceBase, grantTool, withOutcomes] = process.argv.slice(2);
const upstream = new URL(upstreamUrl);
const brokerToken = process.env.FLOOR_BROKER_TOKEN;
// The gateway's own pools' settings (gateway/src/broker-transport.ts, upstream/http-fetch.ts).
const pool = new Agent({ connections: 32, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 30_000, pipelining: 1 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'authorization', 'grant-id', 'content-length']);

async function allowed(message, headers) {
  const answer = await pool.request({
    origin: serviceBase,
    path: '/api/broker/check',
    method: 'POST',
    headers: { authorization: `Bearer ${brokerToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      grantId: headers['grant-id'],
      tool: grantTool,
      args: message.params?.arguments ?? {},
      subjectToken: (headers.authorization ?? '').replace(/^Bearer /, ''),
    }),
  });
  const check = await answer.body.json();
  return answer.statusCode === 200 && check.decision === 'allow' ? check.callId : undefined;
}

// `outcomes` as 5th argument: each allowed call's outcome reported as the gateway does (batches every
// 20 ms, off the call's path), so that what recording outcomes costs the service is in the floor too.
let held = [];
if (withOutcomes === 'outcomes') {
  setInterval(() => {
    if (held.length === 0) return;
    const outcomes = held.splice(0, 100);
    pool
      .request({
        origin: serviceBase,
        path: '/api/broker/outcomes',
        method: 'POST',
        headers: { authorization: `Bearer ${brokerToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ outcomes }),
      })
      .then(
        (answer) => answer.body.dump(),
        () => undefined,
      );
  }, 20);
}

async function handle(request, response) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  if (request.method === 'POST') {
    const message = JSON.parse(body.toString('utf8'));
    const callId = message.method === 'tools/call' ? await allowed(message, request.headers) : true;
    if (callId && withOutcomes === 'outcomes' && typeof callId === 'string')
      response.once('finish', () => held.push({ callId, outcome: 'succeeded', durationMs: 1 }));
    if (!callId) {
      response.writeHead(403, { 'content-type': 'application/json' });
      return void response.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: 'denied' } }));
    }
  }
  const headers = {};
  for (const [name, value] of Object.entries(request.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  const answer = await pool.request({
    origin: upstream.origin,
    path: upstream.pathname,
    method: request.method,
    headers,
    body: body.length ? body : undefined,
  });
  const out = {};
  for (const [name, value] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
  response.writeHead(answer.statusCode, out);
  // The agent gone mid-answer (its session's GET stream, when it closes) is no error of the proxy's.
  answer.body.on('error', () => undefined);
  answer.body.pipe(response);
  response.once('close', () => answer.body.destroy());
}

createServer((request, response) => {
  handle(request, response).catch(() => {
    if (!response.headersSent) response.writeHead(502).end();
    else response.destroy();
  });
}).listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
