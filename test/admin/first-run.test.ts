import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import jwt from 'jsonwebtoken';
import ts from 'typescript';
import { ownDatabase } from '../support/own-database';
import { freePort } from '../support/replica';
import { bearer, startService, type TestService } from '../support/service';

/**
 * A new user's first run: the service started as `npm run demo` starts it, on a fresh checkout
 * (an installation with nothing of its own yet), listens on loopback only and signs with secrets
 * of its own, none of which is in the source; the demo prints lines that work when pasted, and
 * `demo --json` and the console link speak of the same world, on the address the service has.
 */
const root = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const cli = path.join(root, 'dist/src/admin/cli.js');

// A database of its own: an installation's own secrets seal its OAuth signing keys, and a service
// that cannot open the newest makes one and drops older ones, which other files' services in the
// run's database sign and verify with (src/oauth/signing-keys.ts).
const database = ownDatabase('first_run');
const DATABASE_URL = database.url;
beforeAll(() => database.migrated());
afterAll(() => database.drop());

/** A fresh installation's state folder (DEVELOPMENT_STATE_DIR): no secrets, no demo world yet. */
const freshInstallation = () => path.join(mkdtempSync(path.join(tmpdir(), 'checkout-')), '.grant-broker');

/** The environment of a first `npm start`: none of what a test run or a deployment would set. */
function firstStartEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL, POLICY_WATCH: 'false', LOG_LEVEL: 'info', ...extra };
  for (const name of ['NODE_ENV', 'HOST', 'JWT_SECRET', 'APPROVAL_ARGS_KEY', 'PUBLIC_URL']) if (!(name in extra)) delete env[name];
  return env;
}

async function startProcess(env: NodeJS.ProcessEnv, port: number): Promise<{ child: ChildProcess; output: () => string }> {
  let output = '';
  const child = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  for (let attempt = 0; ; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`the service exited: ${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (attempt > 300) throw new Error(`the service did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The local addresses of the sockets listening on `port`, as the kernel lists them (IPv4 and IPv6). */
function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const [file, ipv6] of [
    ['/proc/net/tcp', false],
    ['/proc/net/tcp6', true],
  ] as const) {
    for (const line of readFileSync(file, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      const [hex, portHex] = local!.split(':');
      // State 0A is LISTEN; the address is in the kernel's byte order (little-endian words).
      if (state !== '0A' || parseInt(portHex!, 16) !== port) continue;
      const words = hex!.match(/.{8}/g)!.map((word) => Buffer.from(word, 'hex').reverse());
      const bytes = Buffer.concat(words);
      found.push(ipv6 ? bytes.toString('hex').replace(/(.{4})(?!$)/g, '$1:') : [...bytes].join('.'));
    }
  }
  return found;
}

/** Whether a TCP connection to address:port is taken. */
function accepts(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Every string literal of the service's source (src/), read with the TypeScript parser. */
function sourceLiterals(): string[] {
  const literals = new Set<string>();
  const files = readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(path.join(root, 'src', file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) literals.add(node.text);
      if (ts.isTemplateExpression(node))
        for (const part of [node.head, ...node.templateSpans.map((s) => s.literal)]) literals.add(part.text);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return [...literals].filter((literal) => literal.length > 0);
}

describe('a fresh start of the service', () => {
  let child: ChildProcess;
  let port: number;
  let stateDir: string;
  let output: () => string;

  beforeAll(async () => {
    port = await freePort();
    stateDir = freshInstallation();
    ({ child, output } = await startProcess(firstStartEnv({ PORT: String(port), DEVELOPMENT_STATE_DIR: stateDir }), port));
  }, 60_000);
  afterAll(() => stop(child));

  it('listens on 127.0.0.1 only, not on every interface', async () => {
    expect(listeningAddresses(port)).toEqual(['127.0.0.1']);
    const outside = Object.values(networkInterfaces())
      .flat()
      .filter((entry) => entry && !entry.internal && entry.family === 'IPv4');
    for (const entry of outside)
      expect({ address: entry!.address, accepts: await accepts(entry!.address, port) }).toEqual({
        address: entry!.address,
        accepts: false,
      });
    expect(output()).toMatch(/"host":"127\.0\.0\.1"/);
  });

  it('accepts no token signed with a string of its source, only with the secret it made for this installation', async () => {
    const listPods = (secret: string) =>
      fetch(`http://127.0.0.1:${port}/api/pods`, {
        headers: { authorization: `Bearer ${jwt.sign({}, secret, { algorithm: 'HS256', subject: 'mallory', expiresIn: '5m' })}` },
      });
    const literals = sourceLiterals();
    expect(literals.length).toBeGreaterThan(1000);
    const accepted: string[] = [];
    for (let i = 0; i < literals.length; i += 50) {
      const batch = literals.slice(i, i + 50);
      const statuses = await Promise.all(batch.map(async (literal) => (await listPods(literal)).status));
      statuses.forEach((status, at) => {
        if (status !== 401) accepted.push(`${batch[at]} → ${status}`);
      });
    }
    expect(accepted).toEqual([]);

    // What it does accept: a token signed with the secret it made, kept owner-only.
    const secretsFile = path.join(stateDir, 'secrets.json');
    expect(statSync(secretsFile).mode & 0o777).toBe(0o600);
    const { jwtSecret } = JSON.parse(readFileSync(secretsFile, 'utf8')) as { jwtSecret: string };
    expect((await listPods(jwtSecret)).status).toBe(200);
  }, 120_000);
});

describe('HOST', () => {
  it('says where else to listen: 0.0.0.0 is every interface, as the container sets it', async () => {
    const port = await freePort();
    const { child } = await startProcess(
      firstStartEnv({ PORT: String(port), HOST: '0.0.0.0', DEVELOPMENT_STATE_DIR: freshInstallation() }),
      port,
    );
    try {
      expect(listeningAddresses(port)).toEqual(['0.0.0.0']);
    } finally {
      await stop(child);
    }
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile.split('FROM ').at(-1)).toMatch(/^\s*HOST=0\.0\.0\.0\b/m);
    expect(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')).toMatch(/^ {6}HOST: 0\.0\.0\.0$/m);
  }, 60_000);
});

describe('the demo world', () => {
  // A key prefix of this file's own: the demo users `console-link --as` reads are one per prefix.
  const REDIS_KEY_PREFIX = `${process.env.REDIS_KEY_PREFIX ?? 'gbtest:'}first-run:`;
  const stateDir = freshInstallation();
  let service: TestService;
  const admin = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [cli, ...args], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_KEY_PREFIX,
        DEVELOPMENT_STATE_DIR: stateDir,
        HOST: '127.0.0.1',
        PORT: portOf(service),
        ...env,
      },
      timeout: 30_000,
    });
  const portOf = (s: TestService) => new URL(s.baseUrl).port;

  beforeAll(async () => {
    // The service and the admin command of one installation, neither told a secret.
    service = await startService({ DATABASE_URL, REDIS_KEY_PREFIX, DEVELOPMENT_STATE_DIR: stateDir });
  });
  afterAll(() => service.close());

  /** `npm run admin -- demo`'s output: the world's JSON, then the lines to paste. */
  async function seeded() {
    const { stdout } = await admin(['demo']);
    const [, json, lines] = /^[^\n]*\n(\{[\s\S]*?\n\})\n\n([\s\S]*)$/.exec(stdout)!;
    return { world: JSON.parse(json!), lines: lines!.trim() };
  }

  it('is the one `demo --json` prints after `npm run demo` seeded it, and its console link signs in where the service listens', async () => {
    const { world } = await seeded();
    const { stdout } = await admin(['demo', '--json']);
    const again = JSON.parse(stdout);
    expect({ ...again, owner: again.owner.userId, member: again.member.userId }).toEqual({
      ...world,
      owner: world.owner.userId,
      member: world.member.userId,
    });
    await service.http.get(`/api/pods/${world.pod.id}`).set(bearer(again.owner.token)).expect(200);
    await service.http.get(`/api/approvals/${world.approval.id}`).set(bearer(again.owner.token)).expect(200);

    const { stdout: link } = await admin(['console-link', '--as', 'owner']);
    const url = new URL(link.trim());
    expect(`${url.origin}${url.pathname}`).toBe(`${service.baseUrl}/console/sign-in`);
    const session = await fetch(`${url.origin}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: new URLSearchParams(url.hash.slice(1)).get('code') }),
    });
    expect(session.status).toBe(200);
    const { token, userId } = (await session.json()) as { token: string; userId: string };
    expect(userId).toBe(world.owner.userId);
    await service.http.get(`/api/approvals/${world.approval.id}`).set(bearer(token)).expect(200);
  });

  it('prints lines that work when pasted into a shell: the check is allowed', async () => {
    const { world, lines } = await seeded();
    // Each command as printed, one after the other, with a newline between their answers.
    const commands = lines.split(/\n(?=export |curl )/);
    const script = commands.map((command) => (command.startsWith('curl ') ? `${command}\necho` : command)).join('\n');
    const { stdout } = await run('bash', ['-c', script], { timeout: 30_000 });
    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(answers).toEqual([
      expect.objectContaining({ id: world.pod.id }),
      expect.objectContaining({ id: expect.stringMatching(/^grt_/), status: 'active' }),
      expect.objectContaining({ items: [expect.objectContaining({ id: world.pod.id })] }),
      expect.objectContaining({ decision: 'allow', reason: 'allowed' }),
    ]);
  });

  it('links the console at PUBLIC_URL when the service says it is reached there', async () => {
    await seeded();
    const { stdout } = await admin(['console-link', '--as', 'owner'], { PUBLIC_URL: 'https://broker.example.test/' });
    expect(stdout.trim()).toMatch(/^https:\/\/broker\.example\.test\/console\/sign-in#code=csl_[A-Za-z0-9_-]{43}$/);
    const { stdout: lines } = await admin(['demo'], { PUBLIC_URL: 'https://broker.example.test' });
    expect(lines).toContain('curl -s https://broker.example.test/api/pods/');
  });
});

describe("the demo's first install", () => {
  /**
   * A copy of the checkout's install scripts and tool pins, npm packages already in place, and a
   * `go` on the PATH that records what it is asked to build (and leaves an empty binary) instead
   * of spending minutes on it: what a first `npm run demo` builds, without building it.
   */
  function sandbox() {
    const dir = mkdtempSync(path.join(tmpdir(), 'first-install-'));
    for (const file of [
      'scripts/ensure-deps.sh',
      'scripts/install-tools.sh',
      'tools/opa/go.mod',
      'tools/opa/go.sum',
      'tools/regal/go.mod',
      'tools/regal/go.sum',
      'package-lock.json',
    ]) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      copyFileSync(path.join(root, file), path.join(dir, file));
    }
    mkdirSync(path.join(dir, 'node_modules'));
    writeFileSync(path.join(dir, 'node_modules/.package-lock.json'), '{}');
    const fakeBin = path.join(dir, 'fake-bin');
    mkdirSync(fakeBin);
    const built = path.join(dir, 'built.log');
    writeFileSync(
      path.join(fakeBin, 'go'),
      `#!/bin/sh\necho "$(basename "$PWD") $*" >> ${JSON.stringify(built)}\n: > "$GOBIN/$(basename "$PWD")"\nchmod +x "$GOBIN/$(basename "$PWD")"\n`,
      { mode: 0o755 },
    );
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}` };
    delete env.TOOLS_PREINSTALLED;
    const builtTools = () => (existsSync(built) ? readFileSync(built, 'utf8').trim().split('\n') : []);
    return { dir, env, builtTools };
  }

  it('builds opa only (regal is for the tests), once; the test command builds regal too', async () => {
    const box = sandbox();
    // demo.sh's install step, then what `npm run build` runs for the policy (build-policy.mjs).
    await run('bash', [path.join(box.dir, 'scripts/ensure-deps.sh')], { env: box.env });
    await run('bash', [path.join(box.dir, 'scripts/install-tools.sh')], { env: box.env });
    expect(box.builtTools()).toEqual(['opa install tool']);
    // The policy lint of the test command asks for both: regal is built then, opa is in place.
    await run('bash', [path.join(box.dir, 'scripts/install-tools.sh'), 'opa', 'regal'], { env: box.env });
    expect(box.builtTools()).toEqual(['opa install tool', 'regal install tool']);
    expect(readFileSync(path.join(root, 'scripts/demo.sh'), 'utf8')).toMatch(/^bash scripts\/ensure-deps\.sh$/m);
  });

  it('is said to take a few minutes in the README', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme).toMatch(/first `npm run demo` takes a few minutes/);
  });
});
