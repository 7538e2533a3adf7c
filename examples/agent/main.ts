/**
 * The example agent: `node dist/examples/agent/main.js` (see README.md). Configuration comes
 * from the environment; the runtime token is read from AGENT_TOKEN and never printed.
 */
import { RuntimeClient } from './client';
import { handleEvent } from './handler';
import { FileResultStore } from './store';
import { runForever, runOnce, type LoopOptions } from './worker';

async function main(): Promise<void> {
  const token = process.env.AGENT_TOKEN;
  if (!token) throw new Error('set AGENT_TOKEN to the agent runtime token (art_…)');
  const baseUrl = process.env.GRANT_BROKER_URL ?? 'http://127.0.0.1:8080';
  const resultsDir = process.env.RESULTS_DIR ?? 'agent-results';
  const once = process.argv.includes('--once');

  const client = new RuntimeClient(baseUrl, token);
  const store = new FileResultStore(resultsDir);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());

  const options: LoopOptions = {
    signal: stop.signal,
    waitMs: Number(process.env.WAIT_MS ?? 20_000),
    onProcessed: ({ event, record, fresh }) =>
      console.log(
        `${event.id} ${event.type} delivery=${event.deliveryCount} ${fresh ? 'handled' : 'already handled, acked'}: ${JSON.stringify(record.result)}`,
      ),
    onError: (error, event) => console.error(`${event ? `${event.id}: ` : ''}${error instanceof Error ? error.message : String(error)}`),
  };
  console.log(`agent polling ${baseUrl}, results in ${resultsDir}/`);
  if (once) {
    console.log(`processed ${await runOnce(client, store, handleEvent, options)} event(s)`);
    return;
  }
  await runForever(client, store, handleEvent, options);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
