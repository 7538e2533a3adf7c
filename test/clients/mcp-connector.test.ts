import { CodeHostConnector, UnsendableCall } from '../../gateway/src/github/connector';
import { toolNamed } from '../../gateway/src/github/tools';

/**
 * The MCP broker's connector on its own, with a fetch that records what it was asked to send:
 * whatever the grant broker answered, an argument that would make another URL than the one the
 * check was about (a `..` the URL parser resolves, an empty segment, a non-integer issue) is
 * refused before any request, and everything else reaches the code host as data, percent-encoded.
 */
function recordingConnector() {
  const sent: string[] = [];
  const fetchImpl = (async (url: string | URL | Request) => {
    sent.push(String(url));
    return new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } });
  }) as typeof fetch;
  return { connector: new CodeHostConnector('https://code.example/', 'ghs_token', fetchImpl), sent };
}

const readFile = toolNamed('repos.read_file')!;
const comment = toolNamed('issues.create_comment')!;
const pulls = toolNamed('pulls.list')!;

it.each([
  [
    'a ".." segment in the path',
    readFile,
    { repository: 'acme/api', path: 'docs/../src/key.pem' },
    /path has an empty, "\." or "\.\." segment/,
  ],
  ['a "." segment in the path', readFile, { repository: 'acme/api', path: 'docs/./x' }, /path has/],
  ['an empty segment in the path', readFile, { repository: 'acme/api', path: 'docs//x' }, /path has/],
  ['a path that is ".." alone', readFile, { repository: 'acme/api', path: '..' }, /path has/],
  ['".." as the repository owner', pulls, { repository: '../api' }, /repository has/],
  ['"." as the repository name', pulls, { repository: 'acme/.' }, /repository has/],
  ['a repository of three segments', pulls, { repository: 'acme/api/x' }, /repository must be owner\/name/],
  ['a missing path', readFile, { repository: 'acme/api' }, /path must be a string/],
  ['a ref that is not a string', readFile, { repository: 'acme/api', path: 'README.md', ref: 7 }, /ref must be a string/],
  ['an issue of 1e300', comment, { repository: 'acme/api', issue: 1e300, body: 'x' }, /issue must be a positive safe integer/],
  ['an issue that is not a number', comment, { repository: 'acme/api', issue: '7', body: 'x' }, /issue must be/],
  ['an issue of Infinity', comment, { repository: 'acme/api', issue: Infinity, body: 'x' }, /issue must be/],
  ['an issue of 1.5', comment, { repository: 'acme/api', issue: 1.5, body: 'x' }, /issue must be/],
])('refuses %s without sending anything', async (_case, tool, args, message) => {
  const { connector, sent } = recordingConnector();
  const refused = connector.call(tool, args);
  await expect(refused).rejects.toBeInstanceOf(UnsendableCall);
  await expect(refused).rejects.toThrow(message);
  expect(sent).toEqual([]);
});

it('never names an argument value in its refusal', async () => {
  const { connector } = recordingConnector();
  const refusal = await connector.call(readFile, { repository: 'acme/api', path: 'secret-name/../x' }).catch((error: Error) => error);
  expect(refusal).toBeInstanceOf(UnsendableCall);
  expect((refusal as Error).message).not.toContain('secret-name');
});

it('sends a path with spaces, "#" and "?" as one path, percent-encoded, its "/" kept as separators', async () => {
  const { connector, sent } = recordingConnector();
  await connector.call(readFile, { repository: 'acme/api', path: 'docs/a b#c?.md', ref: 'refs/heads/x#y' });
  expect(sent).toEqual(['https://code.example/repos/acme/api/contents/docs/a%20b%23c%3F.md?ref=refs%2Fheads%2Fx%23y']);
  const url = new URL(sent[0]!);
  expect(url.pathname).toBe('/repos/acme/api/contents/docs/a%20b%23c%3F.md');
  expect(url.hash).toBe('');
});

it('sends a raw "%2e%2e" as data, not as a dot segment the URL parser would resolve', async () => {
  const { connector, sent } = recordingConnector();
  await connector.call(readFile, { repository: 'acme/api', path: 'docs/%2e%2e/key.pem' });
  expect(new URL(sent[0]!).pathname).toBe('/repos/acme/api/contents/docs/%252e%252e/key.pem');
});

it('sends an issue comment to the issue number it was given', async () => {
  const { connector, sent } = recordingConnector();
  await connector.call(comment, { repository: 'acme/api', issue: 7, body: 'LGTM' });
  expect(sent).toEqual(['https://code.example/repos/acme/api/issues/7/comments']);
});
