import type { Command } from 'commander';
import { AGENT, clientFor, PERSON } from './credentials';
import { columns, print, printPage } from './output';
import { blamed } from './problems';

/**
 * Where grants live and what backs them. `pods list` is the installed agent's (the API lists pods
 * for an agent's runtime token); a person reads a pod they belong to, and a connection they own, by id.
 */
export function podAndConnectionCommands(program: Command): void {
  const pods = program.command('pods').description("pods: an installed agent's pods and what it sees of one; a pod with its members");
  pods
    .command('list')
    .description(`the pods the installed agent of ${AGENT.env} is installed in`)
    .option('--json', 'the API body as is')
    .action(async (o) => {
      const c = clientFor(AGENT);
      const page = await blamed({ credential: AGENT }, () => c.unwrap(c.api.GET('/api/agents/runtime/pods')));
      printPage(o.json, page, () => columns([['ID', 'NAME'], ...page.items.map((pod) => [pod.id, pod.name])]));
    });
  pods
    .command('show <podId>')
    .description(`a pod you are a member of (${PERSON.env}) and, as a table, its members`)
    .option('--json', 'the pod as the API gives it (GET /api/pods/{podId})')
    .action(async (podId: string, o) => {
      const c = clientFor(PERSON);
      const params = { params: { path: { podId } } };
      const pod = await blamed({ credential: PERSON, id: podId }, () => c.unwrap(c.api.GET('/api/pods/{podId}', params)));
      if (o.json) return print(true, pod, () => '');
      const members = await blamed({ credential: PERSON, id: podId }, () => c.unwrap(c.api.GET('/api/pods/{podId}/members', params)));
      print(false, pod, () =>
        [
          columns([
            ['ID', 'NAME', 'CREATED BY', 'CREATED'],
            [pod.id, pod.name, pod.createdBy, pod.createdAt],
          ]),
          '',
          columns([['MEMBER', 'KIND', 'ROLE', 'ADDED'], ...members.items.map((m) => [m.memberId, m.kind, m.role, m.addedAt])]),
        ].join('\n'),
      );
    });

  pods
    .command('context <podId>')
    .description(`what the installed agent of ${AGENT.env} sees of a pod it is installed in: members and the grants it can use now`)
    .option('--json', 'the API body as is')
    .action(async (podId: string, o) => {
      const c = clientFor(AGENT);
      const context = await blamed({ credential: AGENT, id: podId }, () =>
        c.unwrap(c.api.GET('/api/agents/runtime/pods/{podId}/context', { params: { path: { podId } } })),
      );
      print(o.json, context, () =>
        [
          `${context.pod.id}  ${context.pod.name}  as ${context.agent.name} (${context.agent.agentId}), runtime ${context.agent.runtime.state}`,
          '',
          columns([['MEMBER', 'KIND', 'ROLE'], ...context.members.map((m) => [m.memberId, m.kind, m.role])]),
          '',
          columns([
            ['GRANT', 'MODE', 'TOOLS', 'EXPIRES'],
            ...context.grants.map((g) => [g.id, g.writeMode, g.tools.join(','), g.expiresAt]),
          ]),
        ].join('\n'),
      );
    });

  const connections = program.command('connections').description('a connection you own: its installation and tools');
  connections
    .command('show <connectionId>')
    .description(`a connection you own (${PERSON.env}) with its tools, their access and where their resources sit`)
    .option('--json', 'the API body as is')
    .action(async (connectionId: string, o) => {
      const c = clientFor(PERSON);
      const connection = await blamed({ credential: PERSON, id: connectionId }, () =>
        c.unwrap(c.api.GET('/api/connections/{connectionId}', { params: { path: { connectionId } } })),
      );
      print(o.json, connection, () =>
        [
          columns([
            ['ID', 'KIND', 'STATUS', 'BROKER', 'INSTALLATION', 'EXTERNAL'],
            [
              connection.id,
              connection.kind,
              connection.status,
              connection.brokerId,
              connection.installationId,
              connection.externalInstallationId,
            ],
          ]),
          '',
          columns([
            ['TOOL', 'ACCESS', 'RESOURCE'],
            ...connection.tools.map((tool) => [
              tool.name,
              tool.access,
              Object.entries(tool.resource ?? {})
                .map(([dimension, pointer]) => `${dimension}=${pointer}`)
                .join(' '),
            ]),
          ]),
        ].join('\n'),
      );
    });
}
