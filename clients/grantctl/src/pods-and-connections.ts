import { Option, type Command } from 'commander';
import { AGENT, clientFor, PERSON, tokenSet, type Credential } from './credentials';
import { columns, CURSOR, LIMIT, pageQuery, print, printPage, UsageError } from './output';
import { blamed } from './problems';

/**
 * Whose pods `pods list` lists. `--as` says; without it, the installed agent's when
 * GRANT_BROKER_AGENT_TOKEN is set (what `pods list` has always done, so scripts holding an
 * agent's token keep their answer), otherwise the person's of GRANT_BROKER_TOKEN.
 */
export function podsListCredential(as: 'person' | 'agent' | undefined): Credential {
  if (as) return as === 'agent' ? AGENT : PERSON;
  return tokenSet(AGENT) ? AGENT : PERSON;
}

/**
 * Where grants live and what backs them: a person's pods (with their role) and connections, an
 * installed agent's pods and what it sees of one, a pod with its members, a connection with its tools.
 */
export function podAndConnectionCommands(program: Command): void {
  const pods = program
    .command('pods')
    .description("pods: a person's or an installed agent's pods, what an agent sees of one, a pod with its members");
  pods
    .command('list')
    .description(
      `the pods you are a member of, with your role (${PERSON.env}), or those the installed agent of ${AGENT.env} is in; ` +
        `without --as, the agent's when ${AGENT.env} is set`,
    )
    .addOption(new Option('--as <who>', 'whose pods: person or agent').choices(['person', 'agent']))
    .option('--json', 'the API body as is')
    .option(...LIMIT)
    .option(...CURSOR)
    .action(async (o) => {
      const credential = podsListCredential(o.as);
      if (credential === AGENT) {
        // An agent is in one pod or a few: its list is one page.
        if (o.cursor) throw new UsageError(`--cursor pages a person's list (--as person); an agent's pods come in one page`);
        const c = clientFor(AGENT);
        const page = await blamed({ credential: AGENT }, () => c.unwrap(c.api.GET('/api/agents/runtime/pods')));
        return printPage(o.json, page, () => columns([['ID', 'NAME'], ...page.items.map((pod) => [pod.id, pod.name])]));
      }
      const c = clientFor(PERSON);
      const page = await blamed({ credential: PERSON }, () => c.unwrap(c.api.GET('/api/pods', { params: { query: pageQuery(o) } })));
      printPage(o.json, page, () =>
        columns([['ID', 'NAME', 'ROLE', 'CREATED'], ...page.items.map((pod) => [pod.id, pod.name, pod.role, pod.createdAt])]),
      );
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

  const connections = program.command('connections').description('the connections you own: their installations and tools');
  connections
    .command('list')
    .description(`the connections you may read (${PERSON.env}): those you own, newest first`)
    .option('--json', 'the API body as is')
    .option(...LIMIT)
    .option(...CURSOR)
    .action(async (o) => {
      const c = clientFor(PERSON);
      const page = await blamed({ credential: PERSON }, () => c.unwrap(c.api.GET('/api/connections', { params: { query: pageQuery(o) } })));
      printPage(o.json, page, () =>
        columns([
          ['ID', 'KIND', 'STATUS', 'EXTERNAL', 'TOOLS'],
          ...page.items.map((connection) => [
            connection.id,
            connection.kind,
            connection.status,
            connection.externalInstallationId,
            connection.tools.map((tool) => tool.name).join(','),
          ]),
        ]),
      );
    });
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
