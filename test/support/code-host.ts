import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small stand-in of a code-hosting API for the MCP broker's tests: files, open pull requests and
 * issue comments of a few repositories, behind an installation token. Every request it served is
 * kept, so a test can prove the connector was never called for a denied tool call.
 */
export interface CodeHost {
  url: string;
  token: string;
  requests: Array<{ method: string; path: string }>;
  comments: Array<{ repository: string; issue: number; body: string }>;
  close(): Promise<void>;
}

const FILES: Record<string, string> = { 'acme/api:README.md': '# acme api\n', 'other/secret:keys.txt': 'do not read' };

export async function startCodeHost(): Promise<CodeHost> {
  const token = 'ghs_stand-in-installation-token';
  const requests: CodeHost['requests'] = [];
  const comments: CodeHost['comments'] = [];
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://code-host');
    requests.push({ method: req.method ?? 'GET', path: url.pathname });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { code: 'bad_credentials' });
    const [, repos, owner, name, kind, ...rest] = url.pathname.split('/').map(decodeURIComponent);
    const repository = `${owner}/${name}`;
    if (repos !== 'repos') return send(404, { code: 'not_found' });
    if (req.method === 'GET' && kind === 'contents') {
      const content = FILES[`${repository}:${rest.join('/')}`];
      return content === undefined
        ? send(404, { code: 'not_found' })
        : send(200, { path: rest.join('/'), ref: url.searchParams.get('ref'), content });
    }
    if (req.method === 'GET' && kind === 'pulls') return send(200, [{ number: 7, title: 'Add retries' }]);
    if (req.method === 'POST' && kind === 'issues' && rest[1] === 'comments') {
      const body = JSON.parse(await readBody(req)) as { body: string };
      comments.push({ repository, issue: Number(rest[0]), body: body.body });
      return send(201, { id: comments.length, body: body.body });
    }
    return send(404, { code: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token,
    requests,
    comments,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
