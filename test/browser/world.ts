import type { RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import pino from 'pino';
import { registerBroker } from '../../src/admin/brokers';
import { buildService, type ServiceOptions } from '../../src/composition';
import { loadConfig, type Config } from '../../src/config';
import { createHttpServer } from '../../src/http/server';
import { createLogger } from '../../src/kernel/log';

/** The service as it runs (console included), on a spare port, with this suite's database and Redis prefix. */
export interface ConsoleService {
  baseUrl: string;
  config: Config;
  /** A one-time console sign-in link for a user (what `npm run admin -- console-link` prints). */
  linkFor(userId: string): Promise<string>;
  /** The service's own dependencies (its database), for what an operator does with the admin command. */
  deps: Awaited<ReturnType<typeof buildService>>['infrastructure'];
  /** Adds the checks counted so far to the trail's tallies (the service does it every second). */
  flushTallies(): Promise<void>;
  close(): Promise<void>;
}

export async function startConsoleService(overrides: Record<string, string> = {}, options: ServiceOptions = {}): Promise<ConsoleService> {
  // The port first, so PUBLIC_URL (the OAuth issuer, the links in webhooks) is where it listens.
  const app: { listener?: RequestListener } = {};
  const server = createHttpServer({ callback: () => (req, res) => (app.listener ? app.listener(req, res) : res.writeHead(503).end()) });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({
    ...process.env,
    POLICY_WATCH: 'false',
    LOG_LEVEL: 'warn',
    DECISION_LOG: 'all',
    PUBLIC_URL: baseUrl,
    ...overrides,
  });
  const service = await buildService(config, { logger: createLogger('warn', pino.destination(2)), migrate: true, ...options });
  app.listener = service.app.callback();
  return {
    baseUrl,
    config,
    deps: service.infrastructure,
    async linkFor(userId) {
      const { code } = await service.infrastructure.consoleLinks.create(userId);
      return `${baseUrl}/console/sign-in#code=${code}`;
    },
    flushTallies: () => service.infrastructure.tallies.flush(),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await service.close();
    },
  };
}

let counter = 0;
export const uniqueId = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

/** The fields of the API's answers that the suite reads. */
export interface Answer {
  id: string;
  name: string;
  token: string;
  decision: string;
  reason: string;
  approvalId: string;
  [field: string]: unknown;
}

/** The API over fetch with one credential: what a broker, an agent or a script would send. */
export function caller(service: ConsoleService, token: string) {
  const send = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const response = await fetch(service.baseUrl + path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const json = (text ? JSON.parse(text) : {}) as Answer;
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
    return json;
  };
  return { get: (path: string) => send('GET', path), post: (path: string, body: unknown = {}) => send('POST', path, body) };
}

export const TOOLS = [
  { name: 'repos.read_file', access: 'read' },
  { name: 'issues.create_comment', access: 'write' },
];

/**
 * A pod with an owner who owns a code-hosting connection, a member, a registered broker and an
 * installed agent with a runtime token, all made through the API (the broker through the admin
 * command's function, as operators register one).
 */
export async function seedWorld(service: ConsoleService) {
  const sign = (sub: string) => jwt.sign({}, service.config.JWT_SECRET, { algorithm: 'HS256', subject: sub, expiresIn: '1h' });
  const ownerId = uniqueId('owner');
  const memberId = uniqueId('member');
  const owner = caller(service, sign(ownerId));
  const pod = await owner.post('/api/pods', { name: 'Browser pod' });
  await owner.post(`/api/pods/${pod.id}/members`, { userId: memberId, role: 'member' });
  const { createDatabase } = await import('../../src/db/database');
  const db = createDatabase(service.config.DATABASE_URL, 1);
  const registered = await registerBroker(db, uniqueId('broker')).finally(() => db.destroy());
  const connection = await owner.post('/api/connections', {
    kind: 'code_hosting_app',
    brokerId: registered.id,
    externalInstallationId: uniqueId('install'),
    tools: TOOLS,
  });
  const agent = await owner.post(`/api/registry/pods/${pod.id}/agents`, { name: 'review-bot', displayName: 'Review bot' });
  const token = await owner.post(`/api/registry/pods/${pod.id}/agents/review-bot/runtime-tokens`, { name: 'browser-suite' });
  const brokerApi = caller(service, registered.token);
  const agentApi = caller(service, token.token as string);

  const grant = (body: Record<string, unknown>) =>
    owner.post('/api/grants', { connectionId: connection.id, target: { kind: 'pod', id: pod.id }, ...body });
  const check = (grantId: string, tool: string, args: Record<string, unknown>, approvalId?: string) =>
    brokerApi.post('/api/broker/check', { grantId, tool, subjectToken: token.token, args, ...(approvalId ? { approvalId } : {}) });

  return {
    podId: pod.id as string,
    ownerId,
    memberId,
    agentName: agent.name as string,
    agentId: agent.agentId as string,
    brokerId: registered.id,
    /** What a gateway of that broker authenticates with. */
    brokerToken: registered.token,
    connectionId: connection.id,
    sign,
    owner,
    agentApi,
    grant,
    check,
  };
}
