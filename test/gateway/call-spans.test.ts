import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startService } from '../support/service';
import { broker, human, installAgent, podWith } from '../support/world';
import {
  configFor,
  connectionFor,
  grantOn,
  httpAgent,
  startEverythingHttp,
  startHttpGateway,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The gateway's MCP requests as OpenTelemetry spans (the SDK's in-memory exporter, shared with the
 * service's): `tools/call <tool>` with the MCP and GenAI attributes, continuing the trace the
 * agent's host sent in `_meta` or in the HTTP request's `traceparent`, with the grant broker's
 * check as its child across HTTP; never an argument or a token in a span.
 */
const exporter = new InMemorySpanExporter();
let world: GatewayWorld;
const cleanups: Array<() => Promise<unknown>> = [];
let grantId: string;
let url: string;

beforeAll(async () => {
  const service = await startService({}, { spanExporter: exporter });
  const owner = human(service, 'owner');
  const podId = await podWith(service, owner);
  const agent = await installAgent(service, owner, podId, 'coder');
  const registered = await broker(service, 'mcp-gateway');
  world = { service, owner, podId, agent, brokerId: registered.id, brokerToken: registered.token };
  const everything = await startEverythingHttp();
  cleanups.push(everything.close);
  const config = configFor(world, { upstream: { url: everything.url }, tools: { echo: { grantTool: 'everything.echo', access: 'read' } } });
  grantId = await grantOn(world, await connectionFor(world, config), { tools: ['everything.echo'] });
  const gateway = await startHttpGateway(world, config);
  cleanups.push(gateway.close);
  url = gateway.url;
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await world.service.close();
});

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';
const SECRET = 'SENTINEL-ECHO-4410';

it("spans a call under the host's _meta traceparent, with the check as its child in the service", async () => {
  const agent = await httpAgent(url, world.agent.token, grantId);
  cleanups.push(() => agent.close());
  exporter.reset();
  const result = (await agent.callTool({
    name: 'echo',
    arguments: { message: SECRET },
    _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
  })) as CallToolResult;
  expect(result.isError).toBeFalsy();

  const spans = exporter.getFinishedSpans();
  const call = spans.find((span) => span.name === 'tools/call echo')!;
  expect(call).toBeDefined();
  expect(call.spanContext().traceId).toBe(TRACE_ID);
  expect(call.parentSpanContext?.spanId).toBe(PARENT_ID);
  expect(call.attributes).toEqual({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo', 'gen_ai.operation.name': 'execute_tool' });
  const check = spans.find((span) => span.name === 'broker.check')!;
  expect(check.spanContext().traceId).toBe(TRACE_ID);
  expect(check.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
  expect(check.attributes['gen_ai.tool.name']).toBe('everything.echo');

  const everything = JSON.stringify(
    spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })),
  );
  for (const secret of [SECRET, world.agent.token, world.brokerToken]) expect(everything).not.toContain(secret);
});

it('takes the HTTP traceparent when _meta has none, and marks a refused call with its reason', async () => {
  // The host's HTTP client sends the trace context as a header on every request of the session.
  const agent = new Client({ name: 'traced-agent', version: '1.0.0' });
  await agent.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: {
        headers: { Authorization: `Bearer ${world.agent.token}`, 'Grant-Id': grantId, traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
      },
    }),
  );
  cleanups.push(() => agent.close());
  exporter.reset();
  await agent.listTools();
  const listing = exporter.getFinishedSpans().find((span) => span.name === 'tools/list')!;
  expect(listing.attributes).toEqual({ 'mcp.method.name': 'tools/list' });
  expect(listing.parentSpanContext?.spanId).toBe(PARENT_ID);

  exporter.reset();
  const refused = (await agent.callTool({ name: 'echo', arguments: { message: 42 } })) as CallToolResult;
  expect(refused).toMatchObject({ isError: true, structuredContent: { reason: 'invalid_arguments' } });
  const call = exporter.getFinishedSpans().find((span) => span.name === 'tools/call echo')!;
  expect(call.attributes['error.type']).toBe('invalid_arguments');
  expect(call.status.code).toBe(2);
  expect(call.parentSpanContext?.spanId).toBe(PARENT_ID);
});
