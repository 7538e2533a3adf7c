import type { Command } from 'commander';
import type { Grant } from '@grant-broker/client';
import { AGENT, clientFor, PERSON } from './credentials';
import { explainAttenuation, explainCreation, type LimitsBody } from './grant-faults';
import { columns, CURSOR, LIMIT, pageQuery, print, printPage, UsageError } from './output';
import { blamed } from './problems';
import { drawTree, loadTree } from './tree';

export const list = (value: string) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

const grantRow = (g: Grant) => [g.id, g.status, g.target.kind, g.target.id, g.writeMode, g.tools.join(','), g.expiresAt];
const GRANT_HEADER = ['ID', 'STATUS', 'TARGET', 'TARGET ID', 'MODE', 'TOOLS', 'EXPIRES'];
const JSON_OPTION = ['--json', 'the API body as is'] as const;

/** The limits a create and an attenuation share (an attenuation inherits each one it omits). */
function withLimits(command: Command, tools: 'required' | 'optional'): Command {
  const toolsFlag = ['--tools <a,b>', tools === 'required' ? 'tools of the connection' : "tools (a subset of the parent's)", list] as const;
  (tools === 'required' ? command.requiredOption(...toolsFlag) : command.option(...toolsFlag))
    .option('--pod <id>', 'target a pod')
    .option('--seat <agentId>', 'target an installed agent')
    .option('--write-mode <mode>', 'read, approve or write')
    .option('--audience <ids>', 'a listed audience', list)
    .option('--calls <n>', 'budget: calls per window')
    .option('--window-ms <ms>', 'budget: window')
    .option('--expires-at <iso>', 'expiry (ISO 8601 UTC)')
    .option('--repositories <patterns>', 'resources: repositories (acme/*)', list)
    .option('--refs <patterns>', 'resources: refs (refs/heads/feature/*)', list)
    .option('--paths <patterns>', 'resources: paths (docs/**)', list)
    .option(...JSON_OPTION);
  return command;
}

interface LimitOptions {
  tools?: string[];
  pod?: string;
  seat?: string;
  writeMode?: string;
  audience?: string[];
  calls?: string;
  windowMs?: string;
  expiresAt?: string;
  repositories?: string[];
  refs?: string[];
  paths?: string[];
}

/** The request body from the options: only what was given, so an attenuation inherits the rest. */
function limitsOf(o: LimitOptions): LimitsBody {
  if (o.pod && o.seat) throw new UsageError('give --pod or --seat, not both');
  const budget = {
    ...(o.calls !== undefined ? { calls: wholeNumber('--calls', o.calls) } : {}),
    ...(o.windowMs !== undefined ? { windowMs: wholeNumber('--window-ms', o.windowMs) } : {}),
  };
  const resources = {
    ...(o.repositories ? { repositories: o.repositories } : {}),
    ...(o.refs ? { refs: o.refs } : {}),
    ...(o.paths ? { paths: o.paths } : {}),
  };
  return {
    ...(o.seat ? { target: { kind: 'seat', id: o.seat } } : o.pod ? { target: { kind: 'pod', id: o.pod } } : {}),
    ...(o.tools ? { tools: o.tools } : {}),
    // The service checks the value (a 400 naming `writeMode`); the type follows the request's.
    ...(o.writeMode ? { writeMode: o.writeMode as LimitsBody['writeMode'] } : {}),
    ...(o.audience ? { audience: o.audience } : {}),
    ...(Object.keys(budget).length > 0 ? { budget } : {}),
    ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
    ...(Object.keys(resources).length > 0 ? { resources } : {}),
  };
}

/** A count as typed: digits only, so `1e999`, `2.5` or `ten` is bad usage here rather than a `null` sent. */
function wholeNumber(flag: string, value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number))
    throw new UsageError(`${flag} takes a whole number (got ${JSON.stringify(value)})`);
  return number;
}

export function grantCommands(program: Command): void {
  const grants = program.command('grants').description('create, attenuate, list, show, draw and revoke grants');

  withLimits(grants.command('create').description(`a root grant on a connection of yours (${PERSON.env})`), 'required')
    .requiredOption('--connection <id>', 'the connection (yours)')
    .action(async (o: LimitOptions & { connection: string; json?: boolean }) => {
      const { target, ...body } = limitsOf(o);
      if (!target) throw new UsageError('give --pod <id> or --seat <agentId>');
      const c = clientFor(PERSON);
      const grant = await blamed(
        { credential: PERSON, id: o.connection, explain: (problem) => explainCreation(problem, o.connection, { target, ...body }) },
        () => c.unwrap(c.api.POST('/api/grants', { body: { connectionId: o.connection, target, tools: o.tools ?? [], ...body } })),
      );
      print(o.json ?? false, grant, () => columns([GRANT_HEADER, grantRow(grant)]));
    });

  withLimits(
    grants
      .command('attenuate <parentId>')
      .description(`as an installed agent (${AGENT.env}), narrow a grant it may use into a child; what is not given is inherited`),
    'optional',
  ).action(async (parentId: string, o: LimitOptions & { json?: boolean }) => {
    const body = limitsOf(o);
    const c = clientFor(AGENT);
    const child = await blamed({ credential: AGENT, id: parentId, explain: (problem) => explainAttenuation(problem, parentId, body) }, () =>
      c.unwrap(c.api.POST('/api/grants/{grantId}/attenuate', { params: { path: { grantId: parentId } }, body })),
    );
    print(o.json ?? false, child, () => columns([GRANT_HEADER, grantRow(child)]));
  });

  grants
    .command('list')
    .requiredOption('--pod <id>', 'the pod')
    .option('--status <status>', 'active, revoked or expired')
    .option(...JSON_OPTION)
    .option(...LIMIT)
    .option(...CURSOR)
    .action(async (o) => {
      const c = clientFor(PERSON);
      const page = await blamed({ credential: PERSON, id: o.pod }, () =>
        c.unwrap(
          c.api.GET('/api/pods/{podId}/grants', {
            params: { path: { podId: o.pod }, query: { ...(o.status ? { status: o.status } : {}), ...pageQuery(o) } },
          }),
        ),
      );
      printPage(o.json, page, () => columns([GRANT_HEADER, ...page.items.map(grantRow)]));
    });

  grants
    .command('show <grantId>')
    .option(...JSON_OPTION)
    .action(async (grantId: string, o) => {
      const c = clientFor(PERSON);
      const grant = await blamed({ credential: PERSON, id: grantId }, () =>
        c.unwrap(c.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } })),
      );
      print(o.json, grant, () => columns([GRANT_HEADER, grantRow(grant)]));
    });

  grants
    .command('revoke <grantId>')
    .option(...JSON_OPTION)
    .action(async (grantId: string, o) => {
      const c = clientFor(PERSON);
      const grant = await blamed({ credential: PERSON, id: grantId }, () =>
        c.unwrap(c.api.POST('/api/grants/{grantId}/revoke', { params: { path: { grantId } } })),
      );
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
      const tree = await blamed({ credential: PERSON, id: grantId }, () => loadTree(clientFor(PERSON), grantId));
      const body = { items: tree.drawn, nextCursor: null, budgetUse: Object.fromEntries(tree.use) };
      print(o.json, body, () => drawTree(tree));
    });
}
