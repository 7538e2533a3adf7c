import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, connectionTools, parseConfig } from '../../gateway/src/config';
import { GATEWAY_MAIN } from './support/gateway-world';

/**
 * The gateway's config is validated before anything starts, and every problem names its field as a
 * user would find it in the file; the built command says so on stderr and exits 1.
 */
const valid = {
  brokerUrl: 'http://127.0.0.1:8080',
  brokerTokenEnv: 'GATEWAY_BROKER_TOKEN',
  upstream: { command: 'node', args: ['server.js'] },
  tools: { read_text_file: { grantTool: 'fs.read', access: 'read', resource: { path: '/path' } } },
};

const problems = (value: unknown) => {
  try {
    parseConfig(value);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

it('takes a valid config, with defaults, and prints the connection tools it needs', () => {
  const config = parseConfig({ ...valid, listen: { port: 0 } });
  expect(config.listen).toEqual({ port: 0, host: '127.0.0.1', maxSessions: 1_000, maxSessionsPerAgent: 32, maxSessionsPerGrantTree: 64 });
  expect(config.callTimeoutMs).toBe(30_000);
  expect(connectionTools(config)).toEqual([{ name: 'fs.read', access: 'read', resource: { path: '/path' } }]);
  expect(parseConfig({ ...valid, upstream: { url: 'http://127.0.0.1:3001/mcp', headers: { 'X-Team': 'a' } } }).upstream).toMatchObject({
    url: 'http://127.0.0.1:3001/mcp',
  });
  expect(parseConfig({ ...valid, upstream: { ...valid.upstream, pathRoot: '/srv/files/' } }).upstream).toMatchObject({
    pathRoot: '/srv/files',
  });
  expect(parseConfig({ ...valid, upstream: { builtin: 'github' } }).upstream).toEqual({
    builtin: 'github',
    tokenEnv: 'GITHUB_TOKEN',
    credential: false,
  });
});

it.each([
  ['a missing brokerUrl', { ...valid, brokerUrl: undefined }, /^brokerUrl: /],
  ['a brokerUrl that is not http(s)', { ...valid, brokerUrl: 'file:///etc/passwd' }, /^brokerUrl: /],
  [
    'an upstream of no known kind',
    { ...valid, upstream: { cmd: 'node' } },
    /^upstream: must be \{command, args\?, env\?\}, \{url, headers\?\} or \{builtin: "github"\}/,
  ],
  ['an access that is neither read nor write', { ...valid, tools: { x: { grantTool: 'x', access: 'admin' } } }, /^tools\.x\.access: /],
  [
    'a resource that is not a JSON pointer',
    { ...valid, tools: { read_text_file: { grantTool: 'fs.read', access: 'read', resource: { path: 'path' } } } },
    /^tools\.read_text_file\.resource\.path: must be a JSON pointer/,
  ],
  [
    'a grant tool the broker would not accept',
    { ...valid, tools: { 'a b': { grantTool: 'bad name!', access: 'read' } } },
    /^tools\["a b"\]\.grantTool: /,
  ],
  [
    'two upstream tools under one grant tool',
    { ...valid, tools: { a: { grantTool: 'same', access: 'read' }, b: { grantTool: 'same', access: 'write' } } },
    /^tools\.b\.grantTool: "same" is already the grant tool of "a"/,
  ],
  ['no tools', { ...valid, tools: {} }, /^tools: name at least one upstream tool/],
  ['an unknown field', { ...valid, tokens: 'x' }, /tokens/],
  ['a port out of range', { ...valid, listen: { port: 70000 } }, /^listen\.port: /],
  ['a relative pathRoot', { ...valid, upstream: { ...valid.upstream, pathRoot: 'srv/files' } }, /^upstream\.pathRoot: an absolute folder/],
  [
    'a pathRoot that climbs',
    { ...valid, upstream: { ...valid.upstream, pathRoot: '/srv/../etc' } },
    /^upstream\.pathRoot: an absolute folder/,
  ],
  ['a pathRoot of / itself', { ...valid, upstream: { ...valid.upstream, pathRoot: '/' } }, /^upstream\.pathRoot: a folder below \//],
  [
    'every interface with no name to answer to',
    { ...valid, listen: { port: 80, host: '0.0.0.0' } },
    /^listen\.allowedHosts: listening on every interface/,
  ],
  [
    'an allowed host with a port',
    { ...valid, listen: { port: 80, host: '10.0.0.5', allowedHosts: ['gw.example.com:443'] } },
    /^listen\.allowedHosts\[0\]: /,
  ],
])('names the field of %s', (_case, value, problem) => {
  expect(problems(value)).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
});

it('the command refuses a bad file with the field named, on stderr, exit 1', async () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'gateway-config-'));
  const file = path.join(folder, 'gateway.json');
  writeFileSync(file, JSON.stringify({ ...valid, tools: { x: { grantTool: 'x', access: 'admin' } } }));
  const run = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [GATEWAY_MAIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env } }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      ),
    );
  const bad = await run(['--config', file]);
  expect(bad).toMatchObject({ code: 1, stdout: '' });
  expect(bad.stderr).toMatch(/invalid config .*gateway\.json:\n\s+tools\.x\.access: /);
  writeFileSync(file, '{ not json');
  expect((await run(['--config', file])).stderr).toMatch(/is not JSON/);
  writeFileSync(file, JSON.stringify(valid));
  expect((await run(['--config', file])).stderr).toMatch(/set GATEWAY_BROKER_TOKEN/);
  const tools = await run(['connection-tools', '--config', file]);
  expect(JSON.parse(tools.stdout)).toEqual([{ name: 'fs.read', access: 'read', resource: { path: '/path' } }]);
});
