import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import type { Database } from '../db/database';
import type { GrantsService } from '../grants/service';
import { ApiError } from '../kernel/errors';
import type { AgentPrincipal, HumanPrincipal } from '../kernel/principals';
import type { PolicyEngine } from '../policy/engine';
import { authorizePodAction } from '../pods/access';
import { GATEWAY_SCOPE } from './provider';
import { agentsOfPods, agentWithId, findResource, grantsOfBroker, podsWhereRole } from './repository';

export interface ConsentDeps {
  db: Database;
  policy: PolicyEngine;
  provider: Provider;
  grants: Pick<GrantsService, 'listOfPod' | 'attenuate'>;
}

/** What the consent form sends: a decision, and with "Allow" the grant, agent, tools and expiry picked. */
export const ConsentDecisionBody = z.discriminatedUnion('decision', [
  z.strictObject({ decision: z.literal('deny') }),
  z.strictObject({
    decision: z.literal('allow'),
    agentId: z.string().min(1).max(100),
    grantId: z.string().min(1).max(100),
    tools: z.array(z.string().min(1).max(200)).min(1).max(200),
    expiresAt: z.iso.datetime({ offset: false }).optional(),
  }),
]);
export type ConsentDecision = z.infer<typeof ConsentDecisionBody>;

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/** The interaction of this browser (its signed cookie), or a 404: another browser's is as unknown as none. */
async function interactionOf(deps: ConsentDeps, req: IncomingMessage, res: ServerResponse, uid: string): Promise<Interaction> {
  let interaction: Interaction;
  try {
    interaction = await deps.provider.interactionDetails(req, res);
  } catch {
    throw new ApiError('not_found', 'no authorization request of this browser is waiting for consent');
  }
  if (interaction.uid !== uid) throw new ApiError('not_found', 'no authorization request of this browser is waiting for consent');
  return interaction;
}

async function clientOf(deps: ConsentDeps, interaction: Interaction) {
  const clientId = String(interaction.params.client_id);
  const client = await deps.provider.Client.find(clientId);
  if (!client) throw new ApiError('not_found', 'the client of this request is not known');
  const redirectUri = String(interaction.params.redirect_uri ?? client.redirectUris?.[0] ?? '');
  return {
    clientId,
    // At most 200 characters, cut between code points so a pair is never halved.
    name:
      typeof client.clientName === 'string' && client.clientName.trim() !== ''
        ? Array.from(client.clientName).slice(0, 200).join('')
        : clientId,
    redirectHost: URL.parse(redirectUri)?.host ?? '',
  };
}

async function resourceOf(deps: ConsentDeps, interaction: Interaction) {
  const resource = interaction.params.resource;
  const row = typeof resource === 'string' ? await findResource(deps.db, resource) : undefined;
  // The authorization endpoint refused anything else; a registration withdrawn since is refused here.
  if (!row) throw new ApiError('not_found', 'the resource of this request is no longer a registered gateway');
  return row;
}

const agentPrincipal = (agent: { id: string; name: string; pod_id: string }): AgentPrincipal => ({
  kind: 'agent',
  agentId: agent.id,
  podId: agent.pod_id,
  agentName: agent.name,
  tokenId: 'oauth-consent',
});

/**
 * What the consent page shows: the client and where the code goes, and the choices the person
 * has — the pods where `pods/access` lets them run agents (`agents.consent`), each pod's agents,
 * and for each agent the active grants it may use (as the grants service reads them for that
 * agent) of the connections behind the requested gateway.
 */
export async function consentDetails(deps: ConsentDeps, person: HumanPrincipal, req: IncomingMessage, res: ServerResponse, uid: string) {
  const interaction = await interactionOf(deps, req, res, uid);
  const client = await clientOf(deps, interaction);
  const resource = await resourceOf(deps, interaction);
  const pods: Array<{ id: string; name: string }> = [];
  for (const pod of await podsWhereRole(deps.db, person.userId, ['owner', 'admin', 'member'])) {
    const allowed = await authorizePodAction(deps, person, pod.id, 'agents.consent').then(
      () => true,
      (error: unknown) => (error instanceof ApiError ? false : Promise.reject(error)),
    );
    if (allowed) pods.push(pod);
  }
  const agents = await agentsOfPods(
    deps.db,
    pods.map((pod) => pod.id),
  );
  const choices = [];
  for (const pod of pods) {
    const podAgents = [];
    for (const agent of agents.filter((candidate) => candidate.pod_id === pod.id)) {
      const page = await deps.grants.listOfPod(agentPrincipal(agent), pod.id, { status: 'active', limit: 100 });
      const usable = page.items.filter((grant) => grant.audience.includes(agent.id));
      const ofGateway = await grantsOfBroker(
        deps.db,
        usable.map((grant) => grant.id),
        resource.broker_id,
      );
      const grants = usable
        .filter((grant) => ofGateway.has(grant.id))
        .map((grant) => ({
          id: grant.id,
          tools: grant.tools,
          writeMode: grant.writeMode,
          expiresAt: grant.expiresAt,
          oauthClient: grant.oauthClient,
        }));
      podAgents.push({ id: agent.id, name: agent.name, grants });
    }
    choices.push({ pod, agents: podAgents });
  }
  return { uid, client, resource: resource.resource, pods: choices };
}

/**
 * The person's answer. "Deny" ends the request with `access_denied`. "Allow" first asks
 * `pods/access` whether the person may run the agent (`agents.consent`: an owner or admin of its
 * pod; a stranger's pod is a 404), then creates the child grant on the agent's behalf through the
 * grants service — the same `grants/attenuate` decision as `POST /api/grants/:id/attenuate`, so it
 * can never widen — naming the client on it, and only then records the consent that issues the code.
 * Nothing is minted when any step refuses.
 */
export async function decideConsent(
  deps: ConsentDeps,
  person: HumanPrincipal,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
  body: ConsentDecision,
): Promise<{ redirectTo: string; grantId?: string }> {
  const interaction = await interactionOf(deps, req, res, uid);
  if (body.decision === 'deny') {
    const redirectTo = await deps.provider.interactionResult(req, res, {
      error: 'access_denied',
      error_description: 'the person declined the connection',
    });
    return { redirectTo };
  }
  const client = await clientOf(deps, interaction);
  const resource = await resourceOf(deps, interaction);
  const agent = await agentWithId(deps.db, body.agentId);
  if (!agent) throw new ApiError('not_found', 'no agent of that id');
  await authorizePodAction(deps, person, agent.pod_id, 'agents.consent');
  const gateway = await grantsOfBroker(deps.db, [body.grantId], resource.broker_id);
  if (!gateway.has(body.grantId)) throw new ApiError('not_found', 'no grant of that id behind this gateway');
  const child = await deps.grants.attenuate(
    agentPrincipal(agent),
    body.grantId,
    { target: { kind: 'seat', id: agent.id }, tools: body.tools, ...(body.expiresAt ? { expiresAt: body.expiresAt } : {}) },
    { clientId: client.clientId, name: client.name, consentedBy: person.userId },
  );
  const grant = new deps.provider.Grant({ accountId: child.id, clientId: client.clientId });
  // The scope is granted both ways oidc-provider asks after it: as a scope of the request and of the resource.
  grant.addOIDCScope(GATEWAY_SCOPE);
  grant.addResourceScope(resource.resource, GATEWAY_SCOPE);
  const grantId = await grant.save();
  const redirectTo = await deps.provider.interactionResult(
    req,
    res,
    { login: { accountId: child.id }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
  return { redirectTo, grantId: child.id };
}
