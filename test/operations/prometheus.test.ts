import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brokerWorld, checkAs } from '../support/broker-world';
import { ownDatabase } from '../support/own-database';
import { startService, type TestService } from '../support/service';
import { createDatabase, migrateToLatest } from '../../src/db/database';
import { rootGrant } from '../support/world';

/**
 * The deploy/ files against the service as it runs: a real Prometheus (Debian's package, which
 * scripts/test-monitoring.sh installs) scrapes it once with the METRICS_TOKEN and loads the alert
 * rules; every metric the rules and the Grafana dashboard name is one the service exports.
 */
const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';
const RULES = path.resolve(__dirname, '../../deploy/prometheus/grant-broker.rules.yml');
const DASHBOARD = path.resolve(__dirname, '../../deploy/grafana/grant-broker.json');
const TOKEN = 'scrape-token-0123456789abcdef0123';
// Its own database: approvals_pending counts every pod's, and other files make some.
const database = ownDatabase('prometheus');

let service: TestService;
let prometheus: ChildProcess | undefined;
let dir: string;
let prometheusUrl: string;

async function sparePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await response.json()) as {
    status: string;
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  };
  expect(body.status).toBe('success');
  return body.data.result;
}

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Names of the metrics a PromQL expression selects: identifiers outside strings, matchers and groupings, not called. */
function metricNamesOf(expr: string): string[] {
  const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset']);
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = [...bare.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)].filter((m) => !m[2] && !KEYWORDS.has(m[1]!)).map((m) => m[1]!);
  return [...new Set(names)];
}

/** Every series name /metrics can answer: each metric's name, and a histogram's parts. */
function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const part of ['_bucket', '_sum', '_count']) names.add(name! + part);
  }
  return names;
}

beforeAll(async () => {
  if (!existsSync(PROMETHEUS)) {
    throw new Error(`${PROMETHEUS} is missing: run scripts/test-monitoring.sh (it installs Debian's prometheus) or set PROMETHEUS_PATH`);
  }
  await database.fresh();
  const db = createDatabase(database.url, 1);
  await migrateToLatest(db);
  await db.destroy();
  service = await startService({ METRICS_TOKEN: TOKEN, DATABASE_URL: database.url });
  dir = await mkdtemp(path.join(tmpdir(), 'gb-prometheus-'));
  const port = await sparePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  const config = {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: [RULES],
    scrape_configs: [
      {
        job_name: 'grant-broker',
        metrics_path: '/metrics',
        authorization: { type: 'Bearer', credentials: TOKEN },
        static_configs: [{ targets: [new URL(service.baseUrl).host] }],
      },
    ],
  };
  // JSON is YAML: no YAML writer needed.
  await writeFile(path.join(dir, 'prometheus.yml'), JSON.stringify(config));
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  prometheus.stderr?.resume();
}, 60_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await service?.close();
  await database.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('a real Prometheus scrapes the service with its token: the target is up and the service series are there', async () => {
  const up = await until('the first scrape', async () => {
    const result = await query('up{job="grant-broker"}');
    return result.length > 0 ? result : undefined;
  });
  expect(up.map((series) => series.value[1])).toEqual(['1']);
  const revision = await query('policy_revision_info{job="grant-broker"} == 1');
  expect(revision.map((series) => series.metric.revision)).toEqual([service.deps.policy.revision]);
  // Read from Postgres at scrape time: nothing waits in this fresh world.
  const pending = await query('approvals_pending{job="grant-broker"}');
  expect(pending.map((series) => series.value[1])).toEqual(['0']);
  const dropped = await query('decision_log_dropped_total{job="grant-broker"}');
  expect(dropped.map((series) => series.metric.reason).sort()).toEqual(['buffer_full', 'event_too_large']);
}, 60_000);

it('loads every alert rule, healthy, each on metrics the service exports', async () => {
  const exposition = (await service.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`).expect(200)).text;
  const exported = exportedNames(exposition);
  const rules = await until('the rules to be evaluated', async () => {
    const response = await fetch(`${prometheusUrl}/api/v1/rules?type=alert`);
    const body = (await response.json()) as { data: { groups: Array<{ rules: Array<{ name: string; query: string; health: string }> }> } };
    const all = body.data.groups.flatMap((group) => group.rules);
    return all.length > 0 && all.every((rule) => rule.health !== 'unknown') ? all : undefined;
  });
  expect(rules.map((rule) => rule.name).sort()).toEqual([
    'ApprovalsWaiting',
    'BrokerChecksFailingClosed',
    'CallTrailArchiveBehind',
    'CallTrailBehind',
    'DecisionLogDropping',
    'PolicyBundleLoadErrors',
  ]);
  for (const rule of rules) {
    expect({ rule: rule.name, health: rule.health }).toEqual({ rule: rule.name, health: 'ok' });
    const names = metricNamesOf(rule.query);
    expect(names.length).toBeGreaterThan(0);
    expect({ rule: rule.name, missing: names.filter((name) => !exported.has(name)) }).toEqual({ rule: rule.name, missing: [] });
  }
  // A quiet world fires nothing.
  const firing = await query('ALERTS{alertstate="firing"}');
  expect(firing.map((series) => series.metric.alertname)).toEqual([]);
}, 60_000);

it('the Grafana dashboard queries only metrics the service exports', async () => {
  const exposition = (await service.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`).expect(200)).text;
  const exported = exportedNames(exposition);
  const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as {
    uid: string;
    panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
  };
  expect(dashboard.uid).toBe('grant-broker');
  const charts = dashboard.panels.filter((panel) => panel.type !== 'row');
  expect(charts.length).toBeGreaterThan(10);
  for (const panel of charts) {
    expect(panel.targets?.length).toBeGreaterThan(0);
    for (const { expr } of panel.targets!) {
      const names = metricNamesOf(expr);
      expect(names.length).toBeGreaterThan(0);
      expect({ panel: panel.title, missing: names.filter((name) => !exported.has(name)) }).toEqual({ panel: panel.title, missing: [] });
    }
  }
  // Every alert's own metrics are on the dashboard too, so the page an alert links to shows it.
  const onDashboard = new Set(charts.flatMap((panel) => panel.targets!.flatMap((target) => metricNamesOf(target.expr))));
  for (const name of [
    'approvals_oldest_pending_age_seconds',
    'decision_log_dropped_total',
    'call_record_days_ahead',
    'policy_load_failures_total',
  ]) {
    expect(onDashboard.has(name)).toBe(true);
  }
});

it('counts the approvals waiting and the age of the oldest, read from Postgres at each scrape', async () => {
  const world = await brokerWorld(service);
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    {
      tools: ['issues.create_comment'],
      writeMode: 'approve',
    },
  );
  const asked = await checkAs(service, world, grant.id, world.agent, { tool: 'issues.create_comment', args: { body: 'hi' } });
  expect(asked.body.decision).toBe('approval_required');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const read = async () => (await service.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`).expect(200)).text;
  const waiting = await read();
  expect(waiting).toMatch(/^approvals_pending 1$/m);
  const age = Number(/^approvals_oldest_pending_age_seconds (\S+)$/m.exec(waiting)?.[1]);
  expect(age).toBeGreaterThanOrEqual(1);
  expect(age).toBeLessThan(60);
  await service.http.post(`/api/approvals/${asked.body.approvalId}/deny`).set(world.owner.auth).send({}).expect(200);
  const decided = await read();
  expect(decided).toMatch(/^approvals_pending 0$/m);
  expect(decided).toMatch(/^approvals_oldest_pending_age_seconds 0$/m);
});

it('says how many days the trail has made ahead and when its last maintenance pass finished', async () => {
  await service.deps.trailMaintenance.runNow();
  const text = (await service.http.get('/metrics').set('Authorization', `Bearer ${TOKEN}`).expect(200)).text;
  expect(text).toMatch(/^call_record_days_ahead 3$/m);
  const finished = Number(/^call_record_maintenance_timestamp_seconds (\S+)$/m.exec(text)?.[1]);
  expect(Math.abs(finished - Date.now() / 1000)).toBeLessThan(60);
});

it('reads metric names out of PromQL the way the checks above rely on', () => {
  expect(metricNamesOf('sum by (reason) (rate(a_total{job=~"$job", x="b{c}"}[5m])) / on (le) b_seconds_bucket > 0.1 or vector(0)')).toEqual(
    ['a_total', 'b_seconds_bucket'],
  );
  expect(metricNamesOf('time() - max(call_record_maintenance_timestamp_seconds) > 3 * 3600')).toEqual([
    'call_record_maintenance_timestamp_seconds',
  ]);
});
