import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import jwt from 'jsonwebtoken';

/**
 * A local stand-in for GitHub's token endpoint, held to GitHub's own contract rather than ours:
 * every request is checked against GitHub's published OpenAPI description (@octokit/openapi):
 * the path against the operation's template and its parameter schema, the body against the
 * operation's requestBody schema (ajv), the headers GitHub requires; and the app's JWT is verified
 * (RS256 with the app's public key, `iss` = the app id, a valid iat/exp window of at most 10
 * minutes). Its own answers are checked against the operation's 201 response schema before they
 * are sent. A request that fails a check is answered as GitHub would (401/404/415/422) and
 * recorded in `rejected`, so a test can assert there were none.
 */

const OPERATION_PATH = '/app/installations/{installation_id}/access_tokens';

interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; parameters: Record<string, unknown>; examples: Record<string, { value: unknown }> };
}
interface Operation {
  parameters: Array<{ $ref?: string }>;
  requestBody: { content: { 'application/json': { schema: object } } };
  responses: Record<string, { content?: { 'application/json': { schema: object } } }>;
}

let compiled:
  { body: ValidateFunction; answer: ValidateFunction; pathParam: ValidateFunction; exampleRepository: Record<string, unknown> } | undefined;

/** GitHub's description, compiled once per test file: the operation's request body, its 201 answer, its path parameter. */
function githubContract() {
  if (compiled) return compiled;
  const document = JSON.parse(readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8')) as OpenApiDocument;
  const operation = document.paths[OPERATION_PATH]!.post!;
  // OpenAPI 3.0 schemas: `nullable`, `example` and friends are not JSON Schema keywords.
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const withComponents = (schema: object) => ajv.compile({ ...schema, components: { schemas: document.components.schemas } });
  const paramRef = operation.parameters[0]!.$ref!.split('/').pop()!;
  const param = document.components.parameters[paramRef] as { name: string; schema: object };
  if (param.name !== 'installation_id') throw new Error('the description names another path parameter');
  // `nullable: true` in a 3.0 schema: null is also a value (rewritten into JSON Schema's type lists).
  const schemas = JSON.parse(JSON.stringify(document.components.schemas), (_key, value: unknown) => {
    if (value && typeof value === 'object' && (value as { nullable?: unknown }).nullable === true) {
      const { nullable: _nullable, ...rest } = value as Record<string, unknown>;
      return { anyOf: [rest, { type: 'null' }] };
    }
    return value;
  }) as Record<string, unknown>;
  document.components.schemas = schemas;
  const example = document.components.examples['installation-token']!.value as { repositories: Array<Record<string, unknown>> };
  compiled = {
    body: withComponents(operation.requestBody.content['application/json'].schema),
    answer: withComponents(operation.responses['201']!.content!['application/json'].schema),
    pathParam: ajv.compile(param.schema),
    exampleRepository: example.repositories[0]!,
  };
  return compiled;
}

export interface GitHubInstallation {
  account: string;
  /** Repository names of the account the installation may reach. */
  repositories: string[];
  /** The permissions the app was granted on this installation. */
  permissions: Record<string, string>;
}

export interface TokenRequestSeen {
  installationId: string;
  body: { repositories?: string[]; repository_ids?: number[]; permissions?: Record<string, string> };
  token: string;
}

export interface LocalGitHub {
  url: string;
  appId: string;
  /** The app's private key in PEM, as an operator would configure it. */
  privateKeyPem: string;
  /** Requests that reached the token endpoint (valid or not). */
  requests: number;
  /** Tokens issued, with what each was asked for. */
  issued: TokenRequestSeen[];
  /** Requests refused for breaking GitHub's contract, with why. */
  rejected: string[];
  /** How the next requests are answered: normally, refused with a status, never, or with far too much. */
  mode: { kind: 'normal' } | { kind: 'refuse'; status: 403 | 422 } | { kind: 'hang' } | { kind: 'huge'; bytes: number; streamed?: boolean };
  close(): Promise<void>;
}

/**
 * `now` is the test's clock, which the service runs on too: tokens expire an hour after it. The
 * app's JWT is judged on the wall clock, which @octokit/auth-app signs it with.
 */
export async function startLocalGitHub(
  installations: Record<string, GitHubInstallation>,
  options: { appId?: string; now?: () => number } = {},
): Promise<LocalGitHub> {
  const appId = options.appId ?? '424242';
  const now = options.now ?? Date.now;
  const contract = githubContract();
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const hanging = new Set<ServerResponse>();
  let counter = 0;
  const state: LocalGitHub = {
    url: '',
    appId,
    privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    requests: 0,
    issued: [],
    rejected: [],
    mode: { kind: 'normal' },
    close: async () => {
      for (const res of hanging) res.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const refuse = (res: ServerResponse, status: number, why: string) => {
    state.rejected.push(why);
    send(res, status, { message: why, documentation_url: 'local' });
  };

  const server: Server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const url = new URL(req.url ?? '/', 'http://github.local');
      const match = /^\/app\/installations\/([^/]+)\/access_tokens$/.exec(url.pathname);
      if (req.method !== 'POST' || !match) return refuse(res, 404, `no such operation: ${req.method} ${url.pathname}`);
      state.requests += 1;
      const installationId = decodeURIComponent(match[1]!);
      if (!/^-?\d+$/.test(installationId) || !contract.pathParam(Number(installationId))) {
        return refuse(res, 404, 'installation_id is not an integer');
      }
      const headerProblem = headersProblem(req);
      if (headerProblem) return refuse(res, headerProblem.status, headerProblem.why);
      const jwtProblem = appJwtProblem(req.headers.authorization ?? '', publicKey, appId);
      if (jwtProblem) return refuse(res, 401, jwtProblem);
      let body: unknown;
      try {
        body = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'));
      } catch {
        return refuse(res, 400, 'the body is not JSON');
      }
      if (!contract.body(body)) return refuse(res, 422, `the body breaks the requestBody schema: ${JSON.stringify(contract.body.errors)}`);
      const asked = body as TokenRequestSeen['body'];
      const installation = installations[installationId];
      if (!installation) return refuse(res, 404, `no installation ${installationId}`);
      if (state.mode.kind === 'refuse') return send(res, state.mode.status, { message: 'refused as told', documentation_url: 'local' });
      if (state.mode.kind === 'hang') {
        hanging.add(res);
        return;
      }
      if (state.mode.kind === 'huge') {
        const text = `{"token":"${'x'.repeat(state.mode.bytes)}"}`;
        if (!state.mode.streamed) {
          res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
          res.end(text);
          return;
        }
        // No Content-Length: the reader finds out only as the bytes arrive.
        res.writeHead(201, { 'Content-Type': 'application/json' });
        for (let at = 0; at < text.length; at += 16_384) res.write(text.slice(at, at + 16_384));
        res.end();
        return;
      }
      const names = asked.repositories ?? installation.repositories;
      if (names.some((name) => !installation.repositories.includes(name))) {
        return send(res, 422, {
          message: 'There is at least one repository that does not exist or is not accessible to the parent installation.',
        });
      }
      const permissions = asked.permissions ?? installation.permissions;
      if (Object.entries(permissions).some(([name, level]) => !within(installation.permissions[name], level))) {
        return send(res, 422, { message: 'The permissions requested are not granted to this installation.' });
      }
      counter += 1;
      const token = `ghs_local${appId}x${counter}x${Math.random().toString(36).slice(2)}`;
      const answer = {
        token,
        expires_at: new Date(now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { ...permissions, metadata: 'read' },
        repository_selection: 'selected',
        repositories: names.map((name, index) => repositoryOf(contract.exampleRepository, installation.account, name, index)),
      };
      if (!contract.answer(answer)) {
        return refuse(res, 500, `the stand-in's own answer breaks the 201 schema: ${JSON.stringify(contract.answer.errors)}`);
      }
      state.issued.push({ installationId, body: asked, token });
      send(res, 201, answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/** What GitHub's REST API requires of every request's headers. */
function headersProblem(req: IncomingMessage): { status: number; why: string } | undefined {
  if (!req.headers['user-agent']) return { status: 403, why: 'no User-Agent (GitHub refuses requests without one)' };
  const accept = req.headers.accept ?? '';
  if (!/^application\/(vnd\.github(\.[\w.-]+)?(\+json)?|json)\b/.test(accept))
    return { status: 415, why: `Accept ${accept} is not GitHub's JSON` };
  const type = req.headers['content-type'] ?? '';
  if (req.headers['content-length'] !== '0' && !/^application\/json\b/.test(type))
    return { status: 415, why: `Content-Type ${type} is not JSON` };
  const version = req.headers['x-github-api-version'];
  if (version !== undefined && version !== '2022-11-28') return { status: 400, why: `unsupported X-GitHub-Api-Version ${String(version)}` };
  return undefined;
}

/** GitHub's rules for an app's JWT: RS256 by the app's key, iss the app id, at most 10 minutes long, valid now. */
function appJwtProblem(authorization: string, publicKey: KeyObject, appId: string): string | undefined {
  const match = /^bearer (\S+)$/i.exec(authorization);
  if (!match) return 'no bearer JWT';
  let claims: jwt.JwtPayload;
  try {
    claims = jwt.verify(match[1]!, publicKey, { algorithms: ['RS256'], clockTolerance: 60 }) as jwt.JwtPayload;
  } catch (error) {
    return `the JWT does not verify: ${(error as Error).message}`;
  }
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== appId) return `iss ${String(claims.iss)} is not the app id`;
  if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return 'iat and exp are required';
  if (claims.iat > now + 60) return 'iat is in the future';
  if (claims.exp - claims.iat > 600 + 60 || claims.exp > now + 600) return 'exp is more than 10 minutes away';
  return undefined;
}

function within(granted: string | undefined, asked: string): boolean {
  const rank = { read: 1, write: 2, admin: 3 } as Record<string, number>;
  return granted !== undefined && (rank[asked] ?? 99) <= (rank[granted] ?? 0);
}

function repositoryOf(example: Record<string, unknown>, account: string, name: string, index: number) {
  const owner = { ...(example.owner as Record<string, unknown>), login: account };
  return { ...example, id: 1000 + index, name, full_name: `${account}/${name}`, owner };
}
