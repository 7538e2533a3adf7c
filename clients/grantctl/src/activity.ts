import type { Command } from 'commander';
import { clientFor, PERSON } from './credentials';
import { columns, CURSOR, LIMIT, pageQuery, print, printPage } from './output';
import { blamed } from './problems';

/** What happens on grants: the call trail, the approvals waiting for a person, the agents' runtimes. */
export function activityCommands(program: Command): void {
  program
    .command('calls <grantId>')
    .description("a grant's call trail, newest first")
    .option('--credential <fingerprint>', 'only the calls that received the minted token of this fingerprint (sha256:…), a leaked one say')
    .option('--json', 'the API body as is')
    .option(...LIMIT)
    .option(...CURSOR)
    .action(async (grantId: string, o) => {
      const c = clientFor(PERSON);
      const query = { ...pageQuery(o), ...(o.credential ? { credential: o.credential } : {}) };
      const page = await blamed({ credential: PERSON, id: grantId }, () =>
        c.unwrap(c.api.GET('/api/grants/{grantId}/calls', { params: { path: { grantId }, query } })),
      );
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

  const approvals = program.command('approvals').description('calls waiting for a person');
  approvals
    .command('list')
    .option('--state <state>', 'pending, approved, denied, expired or used', 'pending')
    .option('--json', 'the API body as is')
    .option(...LIMIT)
    .option(...CURSOR)
    .action(async (o) => {
      const c = clientFor(PERSON);
      const page = await blamed({ credential: PERSON }, () =>
        c.unwrap(c.api.GET('/api/approvals', { params: { query: { state: o.state, ...pageQuery(o) } } })),
      );
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
        const c = clientFor(PERSON);
        const path = action === 'approve' ? '/api/approvals/{approvalId}/approve' : '/api/approvals/{approvalId}/deny';
        const approval = await blamed({ credential: PERSON, id: approvalId }, () =>
          c.unwrap(c.api.POST(path, { params: { path: { approvalId } }, body: o.note ? { note: o.note } : {} })),
        );
        print(o.json, approval, () => `${approval.id} ${approval.state} by ${approval.decidedBy}`);
      });
  }

  const agents = program.command('agents').description("an installed agent's runtime");
  for (const action of ['status', 'start', 'stop'] as const) {
    agents
      .command(`${action} <podId> <name>`)
      .option('--json', 'the API body as is')
      .action(async (podId: string, name: string, o) => {
        const c = clientFor(PERSON);
        const params = { params: { path: { podId, name } } };
        const runtime = await blamed({ credential: PERSON, id: `${podId}/${name}` }, () =>
          c.unwrap(
            action === 'status'
              ? c.api.GET('/api/registry/pods/{podId}/agents/{name}/runtime-status', params)
              : action === 'start'
                ? c.api.POST('/api/registry/pods/{podId}/agents/{name}/runtime-start', params)
                : c.api.POST('/api/registry/pods/{podId}/agents/{name}/runtime-stop', params),
          ),
        );
        print(o.json, runtime, () => `${name}: desired ${runtime.desiredState}, state ${runtime.state}`);
      });
  }
}
