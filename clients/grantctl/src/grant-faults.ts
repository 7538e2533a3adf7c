import type { ApiProblem, AttenuateGrant, Grant } from '@grant-broker/client';
import { clientFor, AGENT, PERSON } from './credentials';
import { joined, widenedFields, type Placed } from './problems';

/** What grantctl asked for: an attenuation's body, or a create's without its connection. */
export type LimitsBody = AttenuateGrant;

const DIMENSIONS = ['repositories', 'refs', 'paths'] as const;
const targetText = (target: { kind: string; id: string }) => `${target.kind} ${target.id}`;

/**
 * An attenuation the service refused, named field by field against the parent (read with the same
 * agent token): which tool the parent lacks, which write mode or budget it exceeds. The service
 * decided; this only shows the parent's value beside what was asked, for each field it named.
 */
export async function explainAttenuation(problem: ApiProblem, parentId: string, asked: LimitsBody): Promise<Placed | undefined> {
  switch (problem.code) {
    case 'grant_widening':
      return widening(problem, parentId, asked);
    case 'grant_not_usable':
      return { fault: parentId, hint: `${parentId} is revoked or expired, or its connection is disconnected: attenuate a usable grant` };
    case 'principal_not_in_audience':
      return { fault: parentId, hint: `the agent of ${AGENT.env} is not in the audience of ${parentId}` };
    case 'runtime_stopped':
      return { fault: AGENT.env, hint: "the agent's runtime is stopped: a pod owner or admin runs `grantctl agents start <podId> <name>`" };
    case 'delegation_too_deep':
    case 'too_many_children':
      return { fault: parentId, hint: `${parentId} can take no further child: attenuate a grant higher in its chain` };
    default:
      return either(problem, asked);
  }
}

async function widening(problem: ApiProblem, parentId: string, asked: LimitsBody): Promise<Placed> {
  const fields = widenedFields(problem);
  const c = clientFor(AGENT);
  const parent = await c.unwrap(c.api.GET('/api/grants/{grantId}', { params: { path: { grantId: parentId } } })).catch(() => undefined);
  const named = fields.map((field) => (parent ? beyond(field, asked, parent) : field));
  return {
    fault: named.join('; '),
    hint: `a child only narrows its parent: ask for no more than ${parentId} allows (grantctl grants show ${parentId})`,
  };
}

/** One widened field: what was asked beside what the parent has. */
function beyond(field: string, asked: LimitsBody, parent: Grant): string {
  switch (field) {
    case 'tools': {
      const extra = (asked.tools ?? []).filter((tool) => !parent.tools.includes(tool));
      // Tools within the parent's can still widen: a write tool under a read write mode.
      return extra.length > 0
        ? `tools: ${joined(extra)} (the parent's: ${joined(parent.tools)})`
        : `tools: ${joined(asked.tools ?? parent.tools)} under writeMode ${asked.writeMode ?? parent.writeMode}`;
    }
    case 'writeMode':
      return `writeMode: ${asked.writeMode} (the parent's: ${parent.writeMode})`;
    case 'budget.calls':
      return `budget.calls: ${asked.budget?.calls} (the parent's: ${parent.budget.calls})`;
    case 'budget.windowMs':
      return `budget.windowMs: ${asked.budget?.windowMs} (the parent's: ${parent.budget.windowMs})`;
    case 'expiresAt':
      return `expiresAt: ${asked.expiresAt} (the parent's: ${parent.expiresAt})`;
    case 'audience': {
      const extra = (asked.audience ?? []).filter((id) => !parent.audience.includes(id));
      return `audience: ${joined(extra.length > 0 ? extra : (asked.audience ?? []))} (the parent's: ${joined(parent.audience)})`;
    }
    case 'target':
      return `target: ${asked.target ? targetText(asked.target) : '?'} (the parent's: ${targetText(parent.target)})`;
    case 'resources':
      return DIMENSIONS.filter((dimension) => asked.resources?.[dimension])
        .map(
          (dimension) =>
            `resources.${dimension}: ${joined(asked.resources![dimension]!)} (the parent's: ${parentPatterns(parent, dimension)})`,
        )
        .join('; ');
    default:
      return field;
  }
}

function parentPatterns(parent: Grant, dimension: (typeof DIMENSIONS)[number]): string {
  const patterns = parent.resources?.[dimension];
  return patterns ? joined(patterns) : 'any';
}

/**
 * A root grant the service refused: the tools the connection lacks (read with the same person's
 * token, the connection's owner), the target at fault.
 */
export async function explainCreation(problem: ApiProblem, connectionId: string, asked: LimitsBody): Promise<Placed | undefined> {
  switch (problem.code) {
    case 'tool_not_enabled': {
      const c = clientFor(PERSON);
      const connection = await c.unwrap(c.api.GET('/api/connections/{connectionId}', { params: { path: { connectionId } } }));
      const known = connection.tools.map((tool) => tool.name);
      const missing = (asked.tools ?? []).filter((tool) => !known.includes(tool));
      return { fault: `tools: ${joined(missing)}`, hint: `not tools of ${connectionId} (its tools: ${joined(known)})` };
    }
    case 'grant_widening': {
      const c = clientFor(PERSON);
      const connection = await c.unwrap(c.api.GET('/api/connections/{connectionId}', { params: { path: { connectionId } } }));
      const writes = connection.tools.filter((tool) => tool.access === 'write').map((tool) => tool.name);
      const asking = (asked.tools ?? []).filter((tool) => writes.includes(tool));
      return {
        fault: `tools: ${joined(asking)} (write) under writeMode ${asked.writeMode ?? 'read'}`,
        hint: 'a write tool needs --write-mode approve or write',
      };
    }
    case 'target_not_allowed':
      return asked.target
        ? {
            fault: targetText(asked.target),
            hint: 'a pod target must be a pod you are a member of; a seat, an agent installed in one',
          }
        : undefined;
    case 'connection_kind_not_allowed':
    case 'connection_disconnected':
      return { fault: connectionId };
    default:
      return either(problem, asked);
  }
}

/** Refusals a create and an attenuation share. */
function either(problem: ApiProblem, asked: LimitsBody): Placed | undefined {
  switch (problem.code) {
    case 'audience_not_member':
      return { fault: `audience: ${joined(asked.audience ?? [])}`, hint: 'every listed id must be a current member of the pod' };
    case 'expiry_out_of_range':
      return { fault: `expiresAt: ${asked.expiresAt ?? '(inherited)'}`, hint: 'in the future and at most 365 days away' };
    default:
      return undefined;
  }
}
