import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { redactUrl, scrubCredentials } from '../../clients/grantctl/src/output';
import { grantctl, type GrantctlRun } from '../support/grantctl';

/**
 * A user and password in GRANT_BROKER_URL (`http://user:S3CRET@host/`) never appear in what
 * grantctl prints, with or without --json, whatever went wrong: the service unreachable, a 4xx
 * answer, a value that is not a URL. They are not sent either: grantctl authenticates with its token.
 */
const token = 'tok_grantctl_credentials';
const leaks = (run: GrantctlRun) => `${run.stdout}${run.stderr}`.match(/S3CRET|user:/g) ?? [];
const problemOf = (run: GrantctlRun) => JSON.parse(run.stderr);

async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.each([[[]], [['--json']]])('grantctl grants show %j', (json: string[]) => {
  it('the service unreachable: exit 2, the URL shown as http://***@host:port/', async () => {
    const port = await closedPort();
    const run = await grantctl(['grants', 'show', 'grt_x', ...json], { url: `http://user:S3CRET@127.0.0.1:${port}`, token });
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(leaks(run)).toEqual([]);
    expect(problemOf(run)).toMatchObject({
      code: 'unreachable',
      detail: expect.stringMatching(new RegExp(`^http://\\*\\*\\*@127\\.0\\.0\\.1:${port}/ could not be reached: .*ECONNREFUSED`)),
    });
  });

  it('a 4xx answer: exit 1 with the problem document; the server saw the token, not the user and password', async () => {
    const received: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      received.push(req.headers);
      res
        .writeHead(404, { 'content-type': 'application/problem+json' })
        .end(JSON.stringify({ type: 'about:blank', title: 'Not found', status: 404, code: 'not_found', detail: 'no grant grt_x' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const run = await grantctl(['grants', 'show', 'grt_x', ...json], { url: `http://user:S3CRET@127.0.0.1:${port}/`, token });
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(leaks(run)).toEqual([]);
      expect(problemOf(run)).toMatchObject({ status: 404, code: 'not_found' });
      expect(received).toHaveLength(1);
      expect(received[0]!.authorization).toBe(`Bearer ${token}`);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a GRANT_BROKER_URL that is not a URL: bad usage, exit 1, the value not repeated', async () => {
    const run = await grantctl(['grants', 'show', 'grt_x', ...json], { url: 'http://user:S3CRET@127.0.0.1:notaport', token });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(leaks(run)).toEqual([]);
    expect(problemOf(run)).toEqual({ code: 'usage', detail: 'GRANT_BROKER_URL is not a URL' });
  });
});

it('redacts the userinfo of a URL, and of any URL inside a message, up to the last "@" before the host', () => {
  expect(redactUrl('http://user:S3CRET@broker.example:8443/base')).toBe('http://***@broker.example:8443/base');
  expect(redactUrl('http://broker.example:8443')).toBe('http://broker.example:8443/');
  expect(scrubCredentials('Request cannot be constructed from a URL that includes credentials: https://user:p@ss@h.example/api/x')).toBe(
    'Request cannot be constructed from a URL that includes credentials: https://***@h.example/api/x',
  );
  expect(scrubCredentials('{"detail":"http://user:S3CRET@h:1/a"}')).toBe('{"detail":"http://***@h:1/a"}');
  expect(scrubCredentials('no URL here, a path //a/b and a mail@example.com')).toBe('no URL here, a path //a/b and a mail@example.com');
});
