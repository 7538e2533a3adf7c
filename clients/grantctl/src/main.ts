import { Command } from 'commander';
import { createClient, type Grant } from '@grant-broker/client';
import { evaluatePolicyFile } from '../../../src/admin/policy-eval';
import { policyImpact } from '../../../src/admin/policy-impact';
import { columns, CURSOR, fail, LIMIT, pageQuery, print, printPage, requestBaseUrl } from './output';
import { drawTree, loadTree } from './tree';

/**
 * grantctl: GRANT_BROKER_URL and GRANT_BROKER_TOKEN say where and as whom; every
 * command takes --json (stdout is then exactly the API's body); a refusal exits 1, trouble 2.
 */
const client = () =>
  createClient({
    baseUrl: requestBaseUrl(),
    token: process.env.GRANT_BROKER_TOKEN ?? '',
    retries: 1,
  });
const list = (value: string) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
const grantRow = (g: Grant) => [g.id, g.status, g.target.kind, g.target.id, g.writeMode, g.tools.join(','), g.expiresAt];
const GRANT_HEADER = ['ID', 'STATUS', 'TARGET', 'TARGET ID', 'MODE', 'TOOLS', 'EXPIRES'];

const program = new Command('grantctl').description('The grant broker from the command line').showHelpAfterError();
const grants = program.command('grants').description('create, list, show, draw and revoke grants');

grants
  .command('create')
  .requiredOption('--connection <id>', 'the connection (yours)')
  .option('--pod <id>', 'target a pod')
  .option('--seat <agentId>', 'target an installed agent')
  .requiredOption('--tools <a,b>', 'tools of the connection', list)
  .option('--write-mode <mode>', 'read, approve or write')
  .option('--audience <ids>', 'a listed audience', list)
  .option('--calls <n>', 'budget: calls per window', Number)
  .option('--window-ms <ms>', 'budget: window', Number)
  .option('--expires-at <iso>', 'expiry (ISO 8601 UTC)')
  .option('--repositories <patterns>', 'resources: repositories', list)
  .option('--json', 'the API body as is')
  .action(async (o) => {
    const c = client();
    const budget =
      o.calls || o.windowMs ? { ...(o.calls ? { calls: o.calls } : {}), ...(o.windowMs ? { windowMs: o.windowMs } : {}) } : undefined;
    const grant = await c.unwrap(
      c.api.POST('/api/grants', {
        body: {
          connectionId: o.connection,
          target: o.seat ? { kind: 'seat', id: o.seat } : { kind: 'pod', id: o.pod },
          tools: o.tools,
          ...(o.writeMode ? { writeMode: o.writeMode } : {}),
          ...(o.audience ? { audience: o.audience } : {}),
          ...(budget ? { budget } : {}),
          ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
          ...(o.repositories ? { resources: { repositories: o.repositories } } : {}),
        },
      }),
    );
    print(o.json, grant, () => columns([GRANT_HEADER, grantRow(grant)]));
  });

grants
  .command('list')
  .requiredOption('--pod <id>', 'the pod')
  .option('--status <status>', 'active, revoked or expired')
  .option('--json', 'the API body as is')
  .option(...LIMIT)
  .option(...CURSOR)
  .action(async (o) => {
    const c = client();
    const page = await c.unwrap(
      c.api.GET('/api/pods/{podId}/grants', {
        params: { path: { podId: o.pod }, query: { ...(o.status ? { status: o.status } : {}), ...pageQuery(o) } },
      }),
    );
    printPage(o.json, page, () => columns([GRANT_HEADER, ...page.items.map(grantRow)]));
  });

grants
  .command('show <grantId>')
  .option('--json', 'the API body as is')
  .action(async (grantId: string, o) => {
    const c = client();
    const grant = await c.unwrap(c.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } }));
    print(o.json, grant, () => columns([GRANT_HEADER, grantRow(grant)]));
  });

grants
  .command('revoke <grantId>')
  .option('--json', 'the API body as is')
  .action(async (grantId: string, o) => {
    const c = client();
    const grant = await c.unwrap(c.api.POST('/api/grants/{grantId}/revoke', { params: { path: { grantId } } }));
    print(o.json, grant, () => `revoked ${grant.id} (and every grant below it) at ${grant.revokedAt}`);
  });

grants
  .command('tree <grantId>')
  .description(
    "draw the grant's chain and every grant below it: status, write mode, budget use in the current window (calls " +
      'through the grant or any grant below it, as the service counts them), expiry',
  )
  .option(
    '--json',
    '{items: the grants drawn, as the API gives them, nextCursor: null, budgetUse: {grantId: {used, calls, windowMs, since}}}',
  )
  .action(async (grantId: string, o) => {
    const tree = await loadTree(client(), grantId);
    const body = { items: tree.drawn, nextCursor: null, budgetUse: Object.fromEntries(tree.use) };
    print(o.json, body, () => drawTree(tree));
  });

program
  .command('calls <grantId>')
  .description("a grant's call trail, newest first")
  .option('--json', 'the API body as is')
  .option(...LIMIT)
  .option(...CURSOR)
  .action(async (grantId: string, o) => {
    const c = client();
    const page = await c.unwrap(c.api.GET('/api/grants/{grantId}/calls', { params: { path: { grantId }, query: pageQuery(o) } }));
    printPage(o.json, page, () =>
      columns([
        ['CALL', 'TOOL', 'OUTCOME', 'REASON', 'PRINCIPAL', 'REQUESTED'],
        ...page.items.map((call) => [
          call.id,
          call.tool,
          call.outcome,
          call.reason,
          `${call.principal.kind}:${call.principal.id}`,
          call.requestedAt,
        ]),
      ]),
    );
  });

const approvals = program.command('approvals').description('calls waiting for a human');
approvals
  .command('list')
  .option('--state <state>', 'pending, approved, denied, expired or used', 'pending')
  .option('--json', 'the API body as is')
  .option(...LIMIT)
  .option(...CURSOR)
  .action(async (o) => {
    const c = client();
    const page = await c.unwrap(c.api.GET('/api/approvals', { params: { query: { state: o.state, ...pageQuery(o) } } }));
    printPage(o.json, page, () =>
      columns([
        ['APPROVAL', 'STATE', 'TOOL', 'PRINCIPAL', 'GRANT', 'EXPIRES'],
        ...page.items.map((a) => [a.id, a.state, a.tool, `${a.principal.kind}:${a.principal.id}`, a.grantId, a.expiresAt]),
      ]),
    );
  });
for (const action of ['approve', 'deny'] as const) {
  approvals
    .command(`${action} <approvalId>`)
    .option('--note <text>', 'why')
    .option('--json', 'the API body as is')
    .action(async (approvalId: string, o) => {
      const c = client();
      const path = action === 'approve' ? '/api/approvals/{approvalId}/approve' : '/api/approvals/{approvalId}/deny';
      const approval = await c.unwrap(c.api.POST(path, { params: { path: { approvalId } }, body: o.note ? { note: o.note } : {} }));
      print(o.json, approval, () => `${approval.id} ${approval.state} by ${approval.decidedBy}`);
    });
}

const agents = program.command('agents').description("an installed agent's runtime");
for (const action of ['status', 'start', 'stop'] as const) {
  agents
    .command(`${action} <podId> <name>`)
    .option('--json', 'the API body as is')
    .action(async (podId: string, name: string, o) => {
      const c = client();
      const params = { params: { path: { podId, name } } };
      const runtime = await c.unwrap(
        action === 'status'
          ? c.api.GET('/api/registry/pods/{podId}/agents/{name}/runtime-status', params)
          : action === 'start'
            ? c.api.POST('/api/registry/pods/{podId}/agents/{name}/runtime-start', params)
            : c.api.POST('/api/registry/pods/{podId}/agents/{name}/runtime-stop', params),
      );
      print(o.json, runtime, () => `${name}: desired ${runtime.desiredState}, state ${runtime.state}`);
    });
}

const policy = program.command('policy').description('the policy module, without a service');
policy
  .command('eval')
  .description('evaluate the built policy module on an input file')
  .requiredOption('--entrypoint <path>', 'e.g. broker/check')
  .requiredOption('--input <file>', 'a JSON input')
  .option('--module <file>', 'the module', 'build/policy/policy.wasm')
  .option('--json', 'the answer as JSON (the default)')
  .action(async (o) => {
    const entrypoint = o.entrypoint.endsWith('/decision') ? o.entrypoint : `${o.entrypoint}/decision`;
    print(true, await evaluatePolicyFile({ entrypoint, inputFile: o.input, modulePath: o.module }), () => '');
  });
policy
  .command('impact <candidate>')
  .description('replay logged decisions (OPA decision events) through a candidate bundle or module; print what would change')
  .requiredOption('--log <file>', "decision events: the service's log lines or a collector's gzip batches (a file or a directory)")
  .option('--json', 'the report as JSON')
  .option('--max-changes <n>', 'exit 1 when more than this many decisions would change (a CI gate)')
  .action(async (candidate: string, o) => {
    const limit = o.maxChanges === undefined ? undefined : Number(o.maxChanges);
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) throw new Error('--max-changes takes a whole number of decisions');
    const report = await policyImpact({ candidate, logFile: o.log });
    print(o.json, report, () =>
      [
        `candidate ${report.candidate ?? candidate}: ${report.replayed} replayed, ${report.skipped} skipped, ${report.changed} would change ` +
          `(${report.allowToDeny} allow→deny, ${report.denyToAllow} deny→allow)` +
          (report.notReplayable.count > 0
            ? `; ${report.notReplayable.count} not replayable (masked: ${Object.keys(report.notReplayable.fields).join(', ')})`
            : ''),
        ...(report.changes.length
          ? [
              columns([
                ['PATH', 'FROM', 'TO', 'COUNT', 'E.G.'],
                ...report.changes.map((c) => [c.path, c.from, c.to, String(c.count), c.decisionIds[0] ?? '']),
              ]),
            ]
          : []),
      ].join('\n'),
    );
    if (limit !== undefined && report.changed > limit) {
      console.error(`${report.changed} decisions would change, more than --max-changes ${limit}`);
      process.exitCode = 1;
    }
  });

program.parseAsync(process.argv).catch(fail);
