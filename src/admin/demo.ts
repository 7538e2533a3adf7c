import jwt from 'jsonwebtoken';
import type { HumanPrincipal } from '../kernel/principals';
import type { Config } from '../config';
import type { Database } from '../db/database';
import type { Services } from '../routes';
import { hashToken } from '../credentials/tokens';
import { registerBroker } from './brokers';

export interface DemoWorld {
  pod: { id: string };
  owner: { userId: string; token: string };
  member: { userId: string; token: string };
  connection: { id: string };
  broker: { id: string; token: string };
  agent: { name: string; agentId: string; token: string };
  /** A write waiting for the owner's approval, so the console's inbox has something to read. */
  approval: { id: string; grantId: string };
  /** A grant of the pod for reading, which the agent's broker checks run on. */
  grant: { id: string };
}

/** The tools of examples/mcp-broker, with where each call's repository, ref and path sit. */
const DEMO_TOOLS = [
  { name: 'repos.read_file', access: 'read' as const, resource: { repository: '/repository', ref: '/ref', path: '/path' } },
  { name: 'pulls.list', access: 'read' as const, resource: { repository: '/repository' } },
  { name: 'issues.create_comment', access: 'write' as const, resource: { repository: '/repository' } },
];

/**
 * Seeds a small world through the same service functions the API uses: a pod with an owner and a
 * member, a broker, a code-hosting connection, and an installed agent with a runtime token.
 */
export async function seedDemoWorld(services: Services, db: Database, config: Config): Promise<DemoWorld> {
  if (config.JWT_JWKS_URI) throw new Error('the demo signs human tokens with JWT_SECRET; unset JWT_JWKS_URI');
  const suffix = Date.now().toString(36);
  const ownerId = `alice-${suffix}`;
  const memberId = `bob-${suffix}`;
  const owner: HumanPrincipal = { kind: 'human', userId: ownerId };
  const sign = (sub: string) => jwt.sign({}, config.JWT_SECRET, { algorithm: 'HS256', subject: sub, expiresIn: '12h' });

  const pod = await services.pods.create(owner, 'Demo pod');
  await services.pods.addMember(owner, pod.id, memberId, 'member');
  const broker = await registerBroker(db, 'demo-broker');
  const connection = await services.connections.create(owner, {
    kind: 'code_hosting_app',
    brokerId: broker.id,
    externalInstallationId: `gh-install-${suffix}`,
    tools: DEMO_TOOLS,
  });
  const agent = await services.registry.install(owner, pod.id, { name: 'review-bot', displayName: 'Review bot' });
  const { token: agentToken } = await services.registry.createToken(owner, pod.id, agent.name, { name: 'demo' });
  const approval = await requestDemoApproval(services, owner, { podId: pod.id, connectionId: connection.id, broker, agentToken });
  const grant = await services.grants.create(owner, {
    connectionId: connection.id,
    target: { kind: 'pod', id: pod.id },
    tools: ['repos.read_file', 'pulls.list'],
  });

  return {
    pod: { id: pod.id },
    owner: { userId: ownerId, token: sign(ownerId) },
    member: { userId: memberId, token: sign(memberId) },
    connection: { id: connection.id },
    broker,
    agent: { name: agent.name, agentId: agent.id, token: agentToken },
    approval,
    grant: { id: grant.id },
  };
}

/** The world's human tokens, signed again (they last 12 hours; the rest of the world lasts). */
export function signDemoTokens(world: DemoWorld, config: Config): DemoWorld {
  const sign = (sub: string) => jwt.sign({}, config.JWT_SECRET, { algorithm: 'HS256', subject: sub, expiresIn: '12h' });
  return {
    ...world,
    owner: { ...world.owner, token: sign(world.owner.userId) },
    member: { ...world.member, token: sign(world.member.userId) },
  };
}

/**
 * The agent asks, through the broker's check, to comment on an issue under a grant in `approve`
 * mode: the call waits for a human, who reads its arguments in the console before deciding.
 */
async function requestDemoApproval(
  services: Services,
  owner: HumanPrincipal,
  world: { podId: string; connectionId: string; broker: { id: string; token: string }; agentToken: string },
): Promise<{ id: string; grantId: string }> {
  const grant = await services.grants.create(owner, {
    connectionId: world.connectionId,
    target: { kind: 'pod', id: world.podId },
    tools: ['issues.create_comment'],
    writeMode: 'approve',
  });
  const answer = await services.broker.check(
    { kind: 'broker', brokerId: world.broker.id, tokenHash: hashToken(world.broker.token), remembered: false },
    {
      grantId: grant.id,
      tool: 'issues.create_comment',
      subjectToken: world.agentToken,
      args: {
        repository: 'acme/widgets',
        issue_number: 42,
        body: 'The release notes mention the new retry flag twice; I will remove the second mention in #43.',
      },
    },
  );
  if (answer.decision !== 'approval_required' || !answer.approvalId)
    throw new Error(`the demo's write was not held for approval: ${answer.decision}`);
  return { id: answer.approvalId, grantId: grant.id };
}

/** Lines to paste into a shell, each answering with the world's own ids and tokens. */
export function demoCurlLines(world: DemoWorld, baseUrl: string): string[] {
  return [
    `export OWNER='${world.owner.token}'`,
    `export AGENT='${world.agent.token}'`,
    `export BROKER='${world.broker.token}'`,
    `curl -s ${baseUrl}/api/pods/${world.pod.id} -H "Authorization: Bearer $OWNER"`,
    `curl -s ${baseUrl}/api/grants -H "Authorization: Bearer $OWNER" -H 'Content-Type: application/json' \\
  -d '{"connectionId":"${world.connection.id}","target":{"kind":"pod","id":"${world.pod.id}"},"tools":["repos.read_file","pulls.list"]}'`,
    `curl -s ${baseUrl}/api/agents/runtime/pods -H "Authorization: Bearer $AGENT"`,
    `curl -s ${baseUrl}/api/broker/check -H "Authorization: Bearer $BROKER" -H 'Content-Type: application/json' \\
  -d '{"grantId":"${world.grant.id}","tool":"repos.read_file","subjectToken":"'"$AGENT"'","args":{"repository":"acme/widgets","ref":"main","path":"README.md"}}'`,
  ];
}
