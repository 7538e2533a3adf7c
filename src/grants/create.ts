import { decisions } from '../kernel/decisions/catalogue';
import type { GrantsDeps } from './deps';
import type { HumanPrincipal } from '../kernel/principals';
import { ApiError } from '../kernel/errors';
import { newId } from '../kernel/ids';
import { enforce } from '../policy/enforce';
import { callerFact, readDecision, viewOf } from './access';
import { emitGrantEvent } from './events';
import { policyFacts, toGrantFact } from './facts';
import { presentGrant } from './presenters';
import { insertGrant, type GrantRow } from './repository';
import type { CreateGrantInput } from './schemas';

/** Defaults for the optional limits of a root grant. */
export const GRANT_DEFAULTS = {
  writeMode: 'read',
  budget: { calls: 1000, windowMs: 3_600_000 },
  lifetimeMs: 30 * 86_400_000,
} as const;

/** The target pod (a seat's own pod for a seat) with its members, and the seat if it is one. */
async function targetFacts(deps: GrantsDeps, target: { kind: string; id: string }) {
  const seat = target.kind === 'seat' ? await deps.lookups.agent(deps.db, target.id) : undefined;
  const podId = target.kind === 'pod' ? target.id : seat?.pod_id;
  const pod = podId && (await deps.lookups.podExists(deps.db, podId)) ? podId : undefined;
  return {
    pod: pod ? { id: pod, members: await deps.lookups.memberIds(deps.db, pod) } : undefined,
    seat: seat ? { id: seat.id, pod_id: seat.pod_id } : undefined,
  };
}

/**
 * A refusal of grants/create, where a connection of the wrong kind is told apart: the kind the
 * connection has and the one a grant needs, so that whoever registered an MCP server's connection
 * as, say, `mcp_server` learns what to register instead (docs/gateway.md).
 */
function enforceNamingKind(kind: string | undefined, decision: Parameters<typeof enforce>[0]): void {
  try {
    enforce(decision);
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'connection_kind_not_allowed') throw error;
    const detail =
      `the connection is of kind ${JSON.stringify(kind)}: a grant is made only on a code_hosting_app connection ` +
      "(an MCP gateway's connection too: register it with kind code_hosting_app)";
    throw new ApiError(error.code, detail, error.extensions);
  }
}

/**
 * Creates a root grant. The facts are gathered here, `grants/create` decides every refusal, and
 * the installation and broker come from the connection, never from the request.
 */
export async function createGrant(deps: GrantsDeps, principal: HumanPrincipal, body: CreateGrantInput) {
  const now = deps.clock.now();
  const found = await deps.lookups.grantableConnection(deps.db, body.connectionId);
  const connection = found?.fact;
  const { pod, seat } = await targetFacts(deps, body.target);
  const writeMode = body.writeMode ?? GRANT_DEFAULTS.writeMode;
  const expiresAt = body.expiresAt ? new Date(body.expiresAt) : new Date(now + GRANT_DEFAULTS.lifetimeMs);
  enforceNamingKind(
    connection?.kind,
    deps.policy.evaluate(decisions.grantsCreate, {
      now_ms: now,
      caller: callerFact(principal),
      connection,
      target: body.target,
      pod,
      seat,
      request: {
        tools: body.tools,
        write_mode: writeMode,
        audience: body.audience,
        expires_at_ms: expiresAt.getTime(),
        ...(body.resources ? { resources: body.resources } : {}),
      },
    }),
  );
  if (!found || !connection || !pod) throw new Error('grants/create allowed without a connection or a target pod');

  const isSeat = body.target.kind === 'seat';
  const id = newId('grant');
  const row: GrantRow = {
    id,
    parent_id: null,
    root_id: id,
    depth: 0,
    connection_id: connection.id,
    installation_id: found.installationId,
    broker_id: found.brokerId,
    target_kind: isSeat ? 'seat' : 'pod',
    target_id: body.target.id,
    target_pod_id: pod.id,
    // A seat grant lists its seat; a pod grant follows membership unless an audience is listed.
    audience_mode: isSeat || body.audience ? 'listed' : 'members',
    audience: isSeat ? [body.target.id] : (body.audience ?? []),
    tools: body.tools,
    write_mode: writeMode,
    budget_calls: body.budget?.calls ?? GRANT_DEFAULTS.budget.calls,
    budget_window_ms: body.budget?.windowMs ?? GRANT_DEFAULTS.budget.windowMs,
    expires_at: expiresAt,
    resources: body.resources ?? null,
    created_at: new Date(now),
    revoked_at: null,
    granted_by: principal.userId,
    created_by: principal.userId,
  };
  const facts = policyFacts({ chain: [toGrantFact(row)], connection }, pod.members);
  const view = viewOf(readDecision(deps, callerFact(principal), facts));
  return deps.db.transaction(async (trx) => {
    const inserted = await insertGrant(trx, row);
    const grant = presentGrant(inserted, view);
    await emitGrantEvent(trx, deps, 'grant.created', facts, { grant });
    return grant;
  });
}
