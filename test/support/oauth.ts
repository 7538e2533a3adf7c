import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '../../src/config';
import { buildService, type ServiceOptions } from '../../src/composition';
import { createLogger } from '../../src/kernel/log';
import type { TestService } from './service';

/**
 * A real service whose PUBLIC_URL (the OAuth issuer) is where it listens: the port is taken first,
 * then the service is built with it and answers on that socket.
 */
export async function startOAuthService(overrides: Record<string, string> = {}, options: ServiceOptions = {}): Promise<TestService> {
  const app: { handler?: Parameters<typeof createServer>[1] } = {};
  const server = createServer((req, res) => (app.handler ? app.handler(req, res) : res.writeHead(503).end()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({ ...process.env, POLICY_WATCH: 'false', LOG_LEVEL: 'debug', PUBLIC_URL: baseUrl, ...overrides });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(line);
      done();
    },
  });
  const service = await buildService(config, { logger: createLogger(config.LOG_LEVEL, sink), ...options });
  app.handler = service.app.callback();
  return {
    http: request(server),
    baseUrl,
    deps: service.infrastructure,
    services: service.services,
    config,
    logs,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await service.close();
    },
  };
}

/** A browser's cookies, enough for one authorization: name=value by path, sent where the path matches. */
export class CookieJar {
  private readonly cookies = new Map<string, { value: string; path: string }>();

  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const [name, ...value] = pair!.split('=');
      const path =
        attributes
          .map((a) => a.trim())
          .find((a) => a.toLowerCase().startsWith('path='))
          ?.slice(5) ?? '/';
      const key = `${name!.trim()}@${path}`;
      if (/expires=thu, 01 jan 1970/i.test(line) || value.join('=') === '') this.cookies.delete(key);
      else this.cookies.set(key, { value: value.join('='), path });
    }
  }

  header(url: string): string {
    const path = new URL(url).pathname;
    return [...this.cookies]
      .filter(([, cookie]) => path === cookie.path || path.startsWith(cookie.path.endsWith('/') ? cookie.path : `${cookie.path}/`))
      .map(([key, cookie]) => `${key.split('@')[0]}=${cookie.value}`)
      .join('; ');
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.header(url);
    if (cookie) headers.set('cookie', cookie);
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.take(response);
    return response;
  }
}

/**
 * A person's browser through an authorization: opens the authorization URL, lands on the consent
 * page (its uid), reads the details and sends the decision with the person's console token, then
 * follows where the answer points until the redirect to the client. Returns each step's answer.
 */
export async function throughConsent(
  baseUrl: string,
  authorizationUrl: string,
  personToken: string,
  decide: (details: ConsentDetails) => Record<string, unknown>,
  jar = new CookieJar(),
) {
  const start = await jar.fetch(authorizationUrl);
  const consentUrl = new URL(start.headers.get('location') ?? '', baseUrl).href;
  const uid = /\/oauth\/consent\/([^/?]+)$/.exec(new URL(consentUrl).pathname)?.[1];
  if (start.status !== 303 || !uid) throw new Error(`the authorization answered ${start.status} ${await start.text()}`);
  const auth = { authorization: `Bearer ${personToken}` };
  const detailsResponse = await jar.fetch(`${baseUrl}/oauth/consent/${uid}/details`, { headers: auth });
  const details = (await detailsResponse.json()) as ConsentDetails;
  if (detailsResponse.status !== 200) return { uid, details, decision: undefined, redirect: undefined };
  const decisionResponse = await jar.fetch(`${baseUrl}/oauth/consent/${uid}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(decide(details)),
  });
  const decision = { status: decisionResponse.status, body: (await decisionResponse.json()) as Record<string, unknown> };
  if (decision.status !== 200) return { uid, details, decision, redirect: undefined };
  let next = new URL(String(decision.body.redirectTo), baseUrl).href;
  for (let hop = 0; hop < 5; hop += 1) {
    const response = await jar.fetch(next);
    const location = response.headers.get('location');
    if (!location) throw new Error(`the resume answered ${response.status} ${await response.text()}`);
    const target = new URL(location, next);
    if (target.origin !== new URL(baseUrl).origin) return { uid, details, decision, redirect: target };
    next = target.href;
  }
  throw new Error('too many redirects');
}

export interface ConsentDetails {
  uid: string;
  client: { clientId: string; name: string; redirectHost: string };
  resource: string;
  pods: Array<{
    pod: { id: string; name: string };
    agents: Array<{ id: string; name: string; grants: Array<{ id: string; tools: string[] }> }>;
  }>;
}
