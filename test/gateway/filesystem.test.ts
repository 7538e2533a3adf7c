import { mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpUpstream } from '../../gateway/src/upstream/mcp';
import {
  call,
  configFor,
  connectionFor,
  FILESYSTEM,
  gatewayWorld,
  grantOn,
  httpAgent,
  names,
  RecordingUpstream,
  startHttpGateway,
  text,
  trail,
  type GatewayWorld,
} from './support/gateway-world';

/**
 * The MCP project's `server-filesystem` over a scratch folder, behind the gateway, with a grant whose
 * paths allow only `docs/**`. The server itself would serve the whole folder (its root); the grant
 * narrows it. The gateway knows the server's root (`upstream.pathRoot`), so a path the server takes
 * absolute inside it is checked as the path relative to it, and `docs/**` holds the folder `docs`
 * itself: both work as a new user expects. Every path that leaves `docs/` — `..`, absolute outside
 * the root, backslashes, percent-encoded dots, `~` — is refused by the check before the upstream
 * sees it: the recording wrapper around the upstream proves it never received those calls, and the
 * file outside stays unread and unchanged.
 */
const SECRET = 'TOP-SECRET-outside-docs';
const FAR_SECRET = 'FAR-SECRET-outside-the-root';
let world: GatewayWorld;
let scratch: string;
let upstream: RecordingUpstream;
let gateway: Awaited<ReturnType<typeof startHttpGateway>>;
let agent: Client;
let grantId: string;

beforeAll(async () => {
  world = await gatewayWorld();
  scratch = mkdtempSync(path.join(tmpdir(), 'gateway-fs-'));
  mkdirSync(path.join(scratch, 'docs/sub'), { recursive: true });
  writeFileSync(path.join(scratch, 'docs/guide.md'), '# guide\n');
  writeFileSync(path.join(scratch, 'docs/sub/note.md'), 'note\n');
  writeFileSync(path.join(scratch, 'secret.txt'), SECRET);
  const far = mkdtempSync(path.join(tmpdir(), 'gateway-far-'));
  writeFileSync(path.join(far, 'secret.txt'), FAR_SECRET);
  symlinkSync(path.join(far, 'secret.txt'), path.join(scratch, 'docs/outside-the-root'));

  const config = configFor(world, {
    upstream: { command: process.execPath, args: [FILESYSTEM, scratch], pathRoot: scratch },
    tools: {
      read_text_file: { grantTool: 'fs.read', access: 'read', resource: { path: '/path' } },
      list_directory: { grantTool: 'fs.list', access: 'read', resource: { path: '/path' } },
      write_file: { grantTool: 'fs.write', access: 'write', resource: { path: '/path' } },
    },
  });
  upstream = new RecordingUpstream(new McpUpstream(config.upstream as { command: string; args: string[] }, 10_000));
  gateway = await startHttpGateway(world, config, upstream);
  grantId = await grantOn(world, await connectionFor(world, config), {
    tools: ['fs.read', 'fs.list', 'fs.write'],
    writeMode: 'write',
    resources: { paths: ['docs/**'] },
  });
  agent = await httpAgent(gateway.url, world.agent.token, grantId);
});
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await world.service.close();
});

it('lists only the mapped tools, and reads, lists and writes inside docs/', async () => {
  expect(names((await agent.listTools()).tools)).toEqual(['list_directory', 'read_text_file', 'write_file']);
  expect(text(await call(agent, 'read_text_file', { path: 'docs/guide.md' }))).toBe('# guide\n');
  expect(text(await call(agent, 'list_directory', { path: 'docs/sub' }))).toMatch(/note\.md/);
  expect((await call(agent, 'write_file', { path: 'docs/new.md', content: 'written' })).isError).toBeFalsy();
  expect(readFileSync(path.join(scratch, 'docs/new.md'), 'utf8')).toBe('written');
  expect(upstream.calls.map((c) => `${c.name} ${String(c.args.path)}`)).toEqual([
    'read_text_file docs/guide.md',
    'list_directory docs/sub',
    'write_file docs/new.md',
  ]);
});

describe('a path out of docs/ is refused before the upstream sees it', () => {
  const secretFile = () => path.join(scratch, 'secret.txt');
  it.each([
    ['a ".." segment', 'docs/../secret.txt', 'resource_invalid'],
    ['".." twice, from a deeper folder', 'docs/sub/../../secret.txt', 'resource_invalid'],
    ['an absolute path inside the root but outside docs', '<scratch>/secret.txt', 'resource_not_allowed'],
    ['an absolute path inside the root that climbs out of docs', '<scratch>/docs/../secret.txt', 'resource_invalid'],
    ['an absolute path with a doubled slash', '<scratch>//docs/guide.md', 'resource_invalid'],
    ['an absolute path that leaves the root', '<scratch>/../secret.txt', 'resource_invalid'],
    ['an absolute path outside the root', '/etc/passwd', 'resource_invalid'],
    ["a sibling folder sharing the root's name as a prefix", '<scratch>-evil/docs/guide.md', 'resource_invalid'],
    ['the root itself', '<scratch>', 'resource_invalid'],
    ['a path outside docs', 'secret.txt', 'resource_not_allowed'],
    ['a "." segment', 'docs/./../secret.txt', 'resource_invalid'],
    ['an empty segment', 'docs//guide.md', 'resource_invalid'],
    ['backslashes', 'docs\\..\\secret.txt', 'resource_invalid'],
    ['a percent-encoded ".."', 'docs/%2e%2e/secret.txt', 'resource_invalid'],
    ['a home-relative path', '~/secret.txt', 'resource_not_allowed'],
    ['a Windows drive path', 'C:\\secret.txt', 'resource_invalid'],
    // The grant broker refuses the whole check (a 400: no JSON string of its may hold a NUL), unrecorded.
    ['a NUL byte', 'docs/guide.md\u0000/../../secret.txt', 'invalid_request'],
  ])('%s', async (_case, rawPath, reason) => {
    const requested = rawPath.replace('<scratch>', scratch);
    const before = {
      calls: upstream.calls.length,
      atime: statSync(secretFile()).atimeMs,
      trail: (await trail(world, grantId)).items.length,
    };
    for (const [tool, args] of [
      ['read_text_file', { path: requested }],
      ['write_file', { path: requested, content: 'overwritten' }],
    ] as const) {
      const refused = await call(agent, tool, args);
      expect(refused).toMatchObject({ isError: true, structuredContent: { reason } });
      expect(JSON.stringify(refused)).not.toContain(SECRET);
    }
    // The upstream never received either call; the file outside is unread and unchanged.
    expect(upstream.calls).toHaveLength(before.calls);
    expect(statSync(secretFile()).atimeMs).toBe(before.atime);
    expect(readFileSync(secretFile(), 'utf8')).toBe(SECRET);
    // Checked and recorded as denied: no outcome was ever reported as a success.
    const after = (await trail(world, grantId)).items.slice(before.trail);
    const recorded = reason === 'invalid_request' ? [] : [`fs.read:denied:${reason}`, `fs.write:denied:${reason}`];
    expect(after.map((item) => `${item.tool}:${item.outcome}:${item.reason}`)).toEqual(recorded);
  });
});

it('an absolute path inside the folder, and a listing of docs itself, as a new user tries them', async () => {
  const before = upstream.calls.length;
  expect(text(await call(agent, 'read_text_file', { path: `${scratch}/docs/guide.md` }))).toBe('# guide\n');
  for (const listed of ['docs', `${scratch}/docs`]) {
    const listing = await call(agent, 'list_directory', { path: listed });
    expect(listing.isError).toBeFalsy();
    expect(text(listing)).toMatch(/guide\.md/);
    expect(text(listing)).toMatch(/sub/);
  }
  // The upstream got the relative spelling the check allowed, never the absolute one.
  expect(upstream.calls.slice(before).map((c) => c.args.path)).toEqual(['docs/guide.md', 'docs', 'docs']);
  expect((await trail(world, grantId)).items.slice(-3).map((item) => `${item.tool}:${item.outcome}`)).toEqual([
    'fs.read:succeeded',
    'fs.list:succeeded',
    'fs.list:succeeded',
  ]);
});

it("a symlink out of the upstream's own root passes the check (its name is under docs/) and is refused by the upstream", async () => {
  const before = upstream.calls.length;
  const result = await call(agent, 'read_text_file', { path: 'docs/outside-the-root' });
  expect(upstream.calls).toHaveLength(before + 1);
  expect(result.isError).toBe(true);
  expect(JSON.stringify(result)).not.toContain(FAR_SECRET);
  const last = (await trail(world, grantId)).items.at(-1)!;
  expect(last).toMatchObject({ tool: 'fs.read', outcome: 'failed' });
});
