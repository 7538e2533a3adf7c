import jwt from 'jsonwebtoken';
import type { HumanPrincipal } from '../kernel/principals';
import type { Config } from '../config';
import type { Database } from '../db/database';
import type { Services } from '../routes';
import { registerBroker } from './brokers';

export interface DemoWorld {
  pod: { id: string };
  owner: { userId: string; token: string };
  member: { userId: string; token: string };
  connection: { id: string };
  broker: { id: string; token: string };
  agent: { name: string; agentId: string; token: string };
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

  return {
    pod: { id: pod.id },
    owner: { userId: ownerId, token: sign(ownerId) },
    member: { userId: memberId, token: sign(memberId) },
    connection: { id: connection.id },
    broker,
    agent: { name: agent.name, agentId: agent.id, token: agentToken },
  };
}

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
  -d '{"grantId":"<grt_… from the create above>","tool":"repos.read_file","subjectToken":"'$AGENT'","args":{"path":"README.md"}}'`,
  ];
}
