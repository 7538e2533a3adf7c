// npm run bench:console: how fast the console is, in Debian's Chromium (headless), against the
// service as it runs (dist/, build/console). Seeds one pod with BENCH_GRANTS (5 000) grants and
// BENCH_APPROVALS (500) pending approvals whose arguments the owner reads, and a week of the trail's
// tallies (BENCH_TALLY_TREES (500) trees calling every hour, a tenth of them denied), then times, ROUNDS
// times each (medians reported):
//   - first load: a new browser context (empty cache), from the sign-in link to the overview
//     showing its chart of the pod's checks (read from the trail's tallies); and the bytes of
//     script and style it fetched;
//   - the approvals page opened (the 50 newest of the 500 pending, with their arguments), and reloaded (warm cache);
//   - the grants page of the pod (50 grants a page, each with its budget read) and its next page;
//   - the API behind them, request by request.
// Performance is measured here, never asserted in a test. Needs `npm run build` and /usr/bin/chromium.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  api,
  benchDatabase,
  DATABASE_URL,
  finish,
  humanToken,
  killChildren,
  machine,
  percentile,
  REDIS_KEY_PREFIX,
  registerBroker,
  require,
  run,
  startService,
} from './bench-harness.mjs';

const GRANTS = Number(process.env.BENCH_GRANTS ?? 5000);
const APPROVALS = Number(process.env.BENCH_APPROVALS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TALLY_TREES = Number(process.env.BENCH_TALLY_TREES ?? 500);
const { chromium } = require('@playwright/test');
const { newId } = require('../dist/src/kernel/ids.js');
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

async function seed(base, db) {
  const ownerId = `console-owner-${run}`;
  const owner = humanToken(ownerId);
  const pod = await api(base, 'POST', '/api/pods', owner, { name: 'Console bench pod' });
  await api(base, 'POST', `/api/registry/pods/${pod.id}/agents`, owner, { name: 'writer' });
  const agentToken = (await api(base, 'POST', `/api/registry/pods/${pod.id}/agents/writer/runtime-tokens`, owner, { name: 'b' })).token;
  const broker = await registerBroker(db, 'console-broker');
  const connection = await api(base, 'POST', '/api/connections', owner, {
    kind: 'code_hosting_app',
    brokerId: broker.id,
    externalInstallationId: `console-${run}`,
    tools: [
      { name: 'repos.read_file', access: 'read' },
      { name: 'issues.create_comment', access: 'write' },
    ],
  });
  const grant = (body) =>
    api(base, 'POST', '/api/grants', owner, { connectionId: connection.id, target: { kind: 'pod', id: pod.id }, ...body });
  // Most grants are copies of one made through the API (the list reads them like any other).
  const template = await db('grants')
    .where('id', (await grant({ tools: ['repos.read_file'] })).id)
    .first();
  for (let i = 1; i < GRANTS - 1; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, GRANTS - 1 - i) }, () => {
      const id = newId('grant');
      return { ...template, id, root_id: id, created_at: new Date() };
    });
    await db('grants').insert(rows);
  }
  // The newest grant holds the writes waiting for approval, each with arguments to read.
  const writes = await grant({ tools: ['issues.create_comment'], writeMode: 'approve', budget: { calls: 10_000, windowMs: 3_600_000 } });
  for (let i = 0; i < APPROVALS; i += 1) {
    const answer = await api(base, 'POST', '/api/broker/check', broker.token, {
      grantId: writes.id,
      tool: 'issues.create_comment',
      subjectToken: agentToken,
      args: { repository: 'acme/widgets', issue_number: i, body: `Comment ${i}: ${'a reasonably long review remark '.repeat(8)}` },
    });
    if (answer.decision !== 'approval_required') throw new Error(`check ${i}: ${answer.decision}`);
  }
  // A busy week in the trail's tallies: every hour, TALLY_TREES of the pod's trees made calls and a
  // tenth of them were denied, for one of a few reasons (what the overview sums, 24 or 168 hours).
  const roots = (await db('grants').where('target_pod_id', pod.id).limit(TALLY_TREES).select('id')).map((row) => row.id);
  const reasons = ['tool_not_allowed', 'resource_not_allowed', 'budget_exhausted', 'repository_not_allowlisted'];
  const hourMs = 3_600_000;
  const thisHour = Date.now() - (Date.now() % hourMs);
  const rows = [];
  for (let h = 1; h < 168; h += 1) {
    const hour = new Date(thisHour - h * hourMs);
    rows.push({ pod_id: pod.id, hour, decision: 'allowed', reason: '', org_rule: '', calls: 23 * roots.length });
    for (const [i, reason] of reasons.entries()) {
      const rule = reason === 'repository_not_allowlisted' ? 'org.repository_allowlist' : '';
      rows.push({ pod_id: pod.id, hour, decision: 'denied', reason, org_rule: rule, calls: (roots.length / 20) * (i + 1) });
    }
  }
  for (let i = 0; i < rows.length; i += 500) await db('call_tallies').insert(rows.slice(i, i + 500));
  for (let d = 1; d < 8; d += 1) {
    const day = new Date(thisHour - d * 86_400_000).toISOString().slice(0, 10);
    const trees = roots.map((root, i) => ({ pod_id: pod.id, day, root_id: root, calls: 24 * (20 + (i % 7)) }));
    for (let i = 0; i < trees.length; i += 1000) await db('call_tree_tallies').insert(trees.slice(i, i + 1000));
  }
  return { podId: pod.id, ownerId, owner };
}

async function consoleLink(base, userId) {
  const { stdout } = await promisify(execFile)(process.execPath, ['dist/src/admin/cli.js', 'console-link', '--user', userId], {
    env: { ...process.env, DATABASE_URL, REDIS_KEY_PREFIX, LOG_LEVEL: 'error' },
  });
  const link = new URL(stdout.trim());
  return `${base}${link.pathname}${link.hash}`;
}

/**
 * Every budget cell of the grants table has its figure (no "…" left): runs in the page. A function,
 * not a string: the console's CSP forbids the eval a string predicate needs.
 */
const BUDGETS_READ = () => ![...globalThis.document.querySelectorAll('td .quiet')].some((cell) => cell.textContent === '…');

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value) => Math.round(value);

async function timedApi(base, url, token, requests = 50) {
  const ms = [];
  for (let i = 0; i < requests; i += 1) {
    const started = process.hrtime.bigint();
    const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${url}: ${res.status}`);
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { p50: Math.round(percentile(ms, 50) * 10) / 10, p90: Math.round(percentile(ms, 90) * 10) / 10 };
}

async function main() {
  const db = await benchDatabase();
  const results = {};
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  try {
    const base = await startService();
    const world = await seed(base, db);
    const first = { ms: [], bytes: 0 };
    const approvals = [];
    const warm = [];
    const grants = [];
    const older = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      let bytes = 0;
      page.on('response', async (response) => {
        if (/\/console\/assets\//.test(response.url())) bytes += (await response.body()).length;
      });
      const link = await consoleLink(base, world.ownerId);
      let started = Date.now();
      await page.goto(link);
      await page
        .getByRole('img', { name: /^Checks per hour: / })
        .locator('canvas')
        .waitFor();
      first.ms.push(Date.now() - started);
      first.bytes = bytes;

      started = Date.now();
      await page.goto(`${base}/console/approvals`);
      await page.getByRole('article').nth(49).waitFor();
      approvals.push(Date.now() - started);

      started = Date.now();
      await page.reload();
      await page.getByRole('article').nth(49).waitFor();
      warm.push(Date.now() - started);

      started = Date.now();
      await page.goto(`${base}/console/pods/${world.podId}/grants`);
      await page.getByRole('row').nth(50).waitFor();
      await page.waitForFunction(BUDGETS_READ);
      grants.push(Date.now() - started);

      started = Date.now();
      await page.getByRole('button', { name: 'Older' }).click();
      await page.getByText('Page 2').waitFor();
      await page.getByRole('row').nth(50).waitFor();
      await page.waitForFunction(BUDGETS_READ);
      older.push(Date.now() - started);
      await context.close();
    }
    results['first load, cold cache: link → the overview and its chart (ms)'] = round(median(first.ms));
    results['console script + style fetched (KiB)'] = round(first.bytes / 1024);
    results[`approvals page, ${APPROVALS} pending: 50 cards with arguments (ms)`] = round(median(approvals));
    results[`approvals page, warm reload, ${APPROVALS} pending (ms)`] = round(median(warm));
    results[`grants page, ${GRANTS} grants: 50 rows with budget (ms)`] = round(median(grants));
    results['grants page: next page (ms)'] = round(median(older));
    const apiRows = {
      'GET /api/approvals?state=pending&limit=50': await timedApi(base, '/api/approvals?state=pending&limit=50', world.owner),
      'GET /api/pods/:podId/grants?limit=50': await timedApi(base, `/api/pods/${world.podId}/grants?status=active&limit=50`, world.owner),
      'GET /api/pods/:podId/overview (24 h)': await timedApi(base, `/api/pods/${world.podId}/overview`, world.owner),
      'GET /api/pods/:podId/overview?range=7d': await timedApi(base, `/api/pods/${world.podId}/overview?range=7d`, world.owner),
    };
    console.log(`\n=== the console with ${GRANTS} grants and ${APPROVALS} pending approvals (median of ${ROUNDS} rounds) ===`);
    console.log(`machine: ${machine()}`);
    console.table(results);
    console.log('the API behind the pages (50 sequential requests, ms):');
    console.table(apiRows);
  } finally {
    await browser.close();
    await finish(db);
  }
}

main().catch((error) => {
  console.error(error);
  killChildren();
  process.exit(1);
});
