import { execFile } from 'node:child_process';
import path from 'node:path';
import { startService, type TestService } from '../support/service';
import { startReplica, type Replica } from '../support/replica';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { ownDatabase } from '../support/own-database';
import type { Human, InstalledAgent } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';

/**
 * Revocation under partition (issue 8, §2), tested the way it broke: replica A (a process of its
 * own) reaches Redis only through a proxy that can blackhole the traffic; replica B reaches it
 * directly and serves broker checks all along. Once any change answers 2xx, B allows nothing it
 * forbids; a change A could not confirm answers 503 and is still applied by B's relay, even
 * with A killed. Both replicas run on a database of this file's own: the outbox B's relay reads is
 * then read by no other file's service (one on a Redis of its own would stamp it there, not here).
 */
const database = ownDatabase('partition');
let proxy: TcpProxy;
let a: Replica;
let b: TestService;
// What reaches Redis through the proxy runs with the production command timeout (the run's default
// is longer): how long a cut-off process waits for Redis is part of what is tested here.
const throughProxy = () => ({ REDIS_URL: proxy.url('redis', '/0'), REDIS_COMMAND_TIMEOUT_MS: '250' });

beforeAll(async () => {
  proxy = await startTcpProxy(6379);
  await database.migrated();
  a = await startReplica({ ...throughProxy(), DATABASE_URL: database.url });
  b = await startService({ DATABASE_URL: database.url });
});
afterAll(async () => {
  await a.kill();
  await b.close();
  await proxy.close();
  await database.drop();
});

interface Sent {
  sentAt: number;
  status: number;
  decision?: string;
}

/** Broker checks on B, back to back on a few connections, until stopped. */
function checksOn(world: BrokerWorld, grantId: string, who: Human | InstalledAgent) {
  const sent: Sent[] = [];
  let running = true;
  const loop = async () => {
    while (running) {
      const sentAt = Date.now();
      const res = await checkAs(b, world, grantId, who);
      sent.push({ sentAt, status: res.status, decision: res.body.decision });
    }
  };
  const loops = Array.from({ length: 3 }, loop);
  return {
    async stop(): Promise<Sent[]> {
      running = false;
      await Promise.all(loops);
      return sent;
    },
  };
}

async function eventually(what: string, probe: () => Promise<boolean>, withinMs = 8000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const allowedAfter = (sent: Sent[], at: number) => sent.filter((s) => s.sentAt >= at && s.decision === 'allow').length;

type Kind = {
  name: string;
  /** Who calls through the grant: the agent, or the human member for a member removal. */
  caller: (world: BrokerWorld) => Human | InstalledAgent;
  change: (replica: { http: TestService['http'] }, world: BrokerWorld, rootId: string) => ReturnType<TestService['http']['post']>;
  /** What the repeat answers once the change is already in place. */
  repeatStatus: number;
};

const runtime = (world: BrokerWorld) => `/api/registry/pods/${world.podId}/agents/${world.agent.name}`;

const KINDS: Kind[] = [
  {
    name: 'revoke',
    caller: (w) => w.agent,
    change: (r, w, root) => r.http.post(`/api/grants/${root}/revoke`).set(w.owner.auth),
    repeatStatus: 200,
  },
  {
    name: 'runtime stop',
    caller: (w) => w.agent,
    change: (r, w) => r.http.post(`${runtime(w)}/runtime-stop`).set(w.owner.auth),
    repeatStatus: 200,
  },
  {
    name: 'member removal',
    caller: (w) => w.member,
    change: (r, w) => r.http.delete(`/api/pods/${w.podId}/members/${w.member.userId}`).set(w.owner.auth),
    repeatStatus: 404,
  },
  {
    name: 'disconnection',
    caller: (w) => w.agent,
    change: (r, w) => r.http.patch(`/api/connections/${w.connectionId}`).set(w.owner.auth).send({ status: 'disconnected' }),
    repeatStatus: 200,
  },
  {
    name: 'runtime token deletion',
    caller: (w) => w.agent,
    change: (r, w) => r.http.delete(`${runtime(w)}/runtime-tokens/${w.agent.tokenId}`).set(w.owner.auth),
    repeatStatus: 404,
  },
  {
    name: 'uninstall',
    caller: (w) => w.agent,
    change: (r, w) => r.http.delete(runtime(w)).set(w.owner.auth),
    repeatStatus: 404,
  },
];

describe.each(KINDS.map((kind) => [kind.name, kind] as const))('%s through a replica cut off from Redis', (_name, kind) => {
  it('answers 503 there; the other replica stops allowing through the relay; nothing is allowed after a 2xx', async () => {
    const world = await brokerWorld(b);
    const { rootId, leafId } = await chainOf(b, world, 1);
    const caller = kind.caller(world);
    expect((await checkAs(a, world, leafId, caller)).body.decision).toBe('allow');
    expect((await checkAs(b, world, leafId, caller)).body.decision).toBe('allow');

    proxy.cut();
    const load = checksOn(world, leafId, caller);
    try {
      const cutOff = await kind.change(a, world, rootId);
      expect({ status: cutOff.status, code: cutOff.body.code }).toEqual({ status: 503, code: 'invalidation_pending' });
      // No restart, no repeat: B's relay stamps what A committed but could not announce.
      await eventually(
        `B stops allowing after the ${kind.name}`,
        async () => (await checkAs(b, world, leafId, caller)).body.decision !== 'allow',
      );
      const firstDenyAt = Date.now();
      const repeat = await kind.change(b, world, rootId);
      expect(repeat.status).toBe(kind.repeatStatus);
      const confirmedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sent = await load.stop();
      expect(allowedAfter(sent, firstDenyAt)).toBe(0);
      expect(allowedAfter(sent, confirmedAt)).toBe(0);
      expect(sent.filter((s) => s.status >= 500)).toEqual([]);
    } finally {
      await load.stop();
      proxy.restore();
    }
  });
});

const cli = path.resolve(__dirname, '../../dist/src/admin/cli.js');

/** The built operator CLI as its own process (the way `npm run admin --` runs it): exit code and output. */
function admin(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { env: { ...process.env, DATABASE_URL: database.url, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

describe('broker revoke (admin CLI) from a process cut off from Redis', () => {
  it('fails there; the other replica refuses the broker through the relay; nothing is allowed after it succeeds', async () => {
    const world = await brokerWorld(b);
    const { leafId } = await chainOf(b, world, 1);
    // B remembers the broker's token, in its token cache and under the tree's version.
    expect((await checkAs(b, world, leafId, world.agent)).body.decision).toBe('allow');

    proxy.cut();
    const load = checksOn(world, leafId, world.agent);
    try {
      const cutOff = await admin(['broker', 'revoke', '--id', world.broker.id], throughProxy());
      expect({ code: cutOff.code, stdout: cutOff.stdout }).toEqual({ code: 1, stdout: '' });
      expect(cutOff.stderr).toMatch(/the change is committed, but not every replica could be told yet/);
      await eventually('B refuses the revoked broker', async () => (await checkAs(b, world, leafId, world.agent)).status === 401);
      const firstDenyAt = Date.now();
      // The repeat finds no token left to revoke, but stamps the broker's trees again: exit 0.
      const repeat = await admin(['broker', 'revoke', '--id', world.broker.id]);
      expect({ code: repeat.code, out: JSON.parse(repeat.stdout) }).toEqual({ code: 0, out: { revoked: 0 } });
      const confirmedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sent = await load.stop();
      expect(allowedAfter(sent, firstDenyAt)).toBe(0);
      expect(allowedAfter(sent, confirmedAt)).toBe(0);
      expect(sent.filter((s) => s.sentAt >= firstDenyAt && s.status !== 401)).toEqual([]);
      expect(sent.filter((s) => s.status >= 500)).toEqual([]);
    } finally {
      await load.stop();
      proxy.restore();
    }
  });
});

describe('a change through a healthy replica', () => {
  it('is in force on the other replica for every check sent after its 2xx', async () => {
    const world = await brokerWorld(b);
    const { rootId, leafId } = await chainOf(b, world, 2);
    expect((await checkAs(b, world, leafId, world.agent)).body.decision).toBe('allow');
    const load = checksOn(world, leafId, world.agent);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await a.http.post(`/api/grants/${rootId}/revoke`).set(world.owner.auth).expect(200);
    const answeredAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sent = await load.stop();
    expect(sent.filter((s) => s.sentAt < answeredAt && s.decision === 'allow').length).toBeGreaterThan(0);
    expect(allowedAfter(sent, answeredAt)).toBe(0);
  });
});

describe('the revoking replica killed between commit and stamp', () => {
  it('loses nothing: the revocation committed there is applied by the relay of the survivor', async () => {
    const world = await brokerWorld(b);
    const { rootId, leafId } = await chainOf(b, world, 1);
    expect((await checkAs(b, world, leafId, world.agent)).body.decision).toBe('allow');
    const revoked = () => b.deps.db('grants').where({ id: rootId }).whereNotNull('revoked_at').first();

    proxy.cut();
    const load = checksOn(world, leafId, world.agent);
    try {
      // A commits, then hangs on the stamp: it is killed before it can answer.
      void a.http
        .post(`/api/grants/${rootId}/revoke`)
        .set(world.owner.auth)
        .then(
          () => undefined,
          () => undefined,
        );
      await eventually('the revocation commits on A', async () => (await revoked()) !== undefined);
      await a.kill('SIGKILL');
      const killedAt = Date.now();
      await eventually('B stops allowing', async () => (await checkAs(b, world, leafId, world.agent)).body.reason === 'revoked');
      const deniedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sent = await load.stop();
      expect(allowedAfter(sent, deniedAt)).toBe(0);
      // Converged through the relay, not through the cached facts' age limit (60 s).
      expect(deniedAt - killedAt).toBeLessThan(10_000);
    } finally {
      await load.stop();
      proxy.restore();
      a = await startReplica({ ...throughProxy(), DATABASE_URL: database.url });
    }
  });
});
