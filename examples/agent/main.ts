/**
 * The example agent: `node dist/examples/agent/main.js` (see README.md). Configuration comes
 * from the environment; tokens are read from it and never printed.
 *
 * `--call <tool> '<json args>'` (with GRANT_ID, BROKER_TOKEN, CONNECTOR_URL, CONNECTOR_TOKEN) makes
 * one tool call through the broker's check first. A call answered `approval_required` is kept and
 * re-sent with the same arguments and its `approvalId` when `approval.decided` arrives.
 * `--once`: handle what is pending, wait for kept calls to be answered, then exit.
 */
import { createClient } from '@grant-broker/client';
import { CodeHostConnector } from '../../gateway/src/github/connector';
import { toolNamed } from '../../gateway/src/github/tools';
import { ApprovalWaits, type CallAnswer, type CallTool, type ToolCall } from './approvals';
import { brokeredCalls } from './calls';
import { RuntimeClient } from './client';
import { withApprovals } from './handler';
import { FileResultStore } from './store';
import { runForever, runOnce, type LoopOptions } from './worker';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (see examples/agent/README.md)`);
  return value;
}

/** `--call <tool> <json>` pairs of the command line. */
function callsOf(argv: readonly string[]): Array<Omit<ToolCall, 'grantId'>> {
  const calls: Array<Omit<ToolCall, 'grantId'>> = [];
  argv.forEach((arg, i) => {
    if (arg !== '--call') return;
    const [tool, json] = [argv[i + 1], argv[i + 2]];
    if (!tool || json === undefined) throw new Error("usage: --call <tool> '<json args>'");
    const args: unknown = JSON.parse(json);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Error('--call: the arguments must be a JSON object');
    calls.push({ tool, args: args as Record<string, unknown> });
  });
  return calls;
}

/** The broker's side of a tool call, in this process: the check through the SDK, then the connector. */
function toolCalls(baseUrl: string, agentToken: string): CallTool {
  const broker = createClient({ baseUrl, token: required('BROKER_TOKEN') });
  const connector = new CodeHostConnector(required('CONNECTOR_URL'), required('CONNECTOR_TOKEN'));
  return brokeredCalls(broker, agentToken, async (call) => {
    const tool = toolNamed(call.tool);
    if (!tool) throw new Error(`no tool ${call.tool} on this connector`);
    return connector.call(tool, call.args);
  });
}

const describeAnswer = (tool: string, answer: CallAnswer) =>
  `call ${tool}: ${answer.decision} (${answer.reason})` +
  (answer.decision === 'approval_required' ? ` approval ${answer.approvalId}, waiting for approval.decided` : '') +
  (answer.decision === 'allow' ? ` ${answer.error ? `tool failed: ${answer.error}` : JSON.stringify(answer.result)}` : '');

async function main(): Promise<void> {
  const token = required('AGENT_TOKEN');
  const baseUrl = process.env.GRANT_BROKER_URL ?? 'http://127.0.0.1:8080';
  const resultsDir = process.env.RESULTS_DIR ?? 'agent-results';
  const once = process.argv.includes('--once');
  const calls = callsOf(process.argv);

  const client = new RuntimeClient(baseUrl, token);
  const store = new FileResultStore(resultsDir);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());

  const waits = new ApprovalWaits(calls.length > 0 ? toolCalls(baseUrl, token) : failNoBroker);
  const options: LoopOptions = {
    signal: stop.signal,
    waitMs: Number(process.env.WAIT_MS ?? 20_000),
    leaseMs: Number(process.env.EVENT_LEASE_MS ?? 30_000),
    onProcessed: ({ event, record, fresh }) =>
      console.log(
        `${event.id} ${event.type} delivery=${event.deliveryCount} ${fresh ? 'handled' : 'already handled, acked'}: ${JSON.stringify(record.result)}`,
      ),
    onError: (error, event) => console.error(`${event ? `${event.id}: ` : ''}${error instanceof Error ? error.message : String(error)}`),
  };
  console.log(`agent polling ${baseUrl}, results in ${resultsDir}/`);
  for (const call of calls) {
    const answer = await waits.call({ grantId: required('GRANT_ID'), ...call });
    console.log(describeAnswer(call.tool, answer));
  }
  const handle = withApprovals(waits);
  if (once) {
    let processed = await runOnce(client, store, handle, { ...options, waitMs: 0 });
    // Calls kept for a human: long-poll until their approval.decided has been handled.
    while (waits.pending > 0 && !stop.signal.aborted) processed += await runOnce(client, store, handle, options);
    console.log(`processed ${processed} event(s)`);
    return;
  }
  await runForever(client, store, handle, options);
}

const failNoBroker: CallTool = () => Promise.reject(new Error('no broker configured: tool calls need --call with BROKER_TOKEN'));

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
