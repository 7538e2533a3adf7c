import { randomBytes } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { loadConfig } from '../../src/config';
import { buildBundle, keyPair, scratchDir } from '../support/policy-bundles';
import { startService, type TestService } from '../support/service';

/**
 * Issue 25 item 6: the bundle download had no size cap (a 1 GiB answer was buffered until the
 * timeout), and what a bundle unpacks to was capped by a constant. Now POLICY_BUNDLE_MAX_BYTES
 * bounds the answer (refused at once by its Content-Length, else as soon as more has arrived, the
 * connection dropped), the file, and four times it what the gzip unpacks to; each refusal is
 * counted, and the serving policy keeps deciding.
 */
const MiB = 1024 * 1024;
const ANSWER_BYTES = 40 * MiB;
const CHUNK_EVERY_MS = 50;
const work = scratchDir('bundle-size-');
const rsa = keyPair(work, 'rsa');
let signed: Buffer;

beforeAll(() => {
  signed = buildBundle(work, 'signed', { POLICY_SIGNING_KEY: rsa.privateFile, POLICY_REVISION: 'rev-1' });
}, 120_000);

/** A tar.gz of a few kilobytes holding one file of `bytes` zeros. */
async function gzipBomb(bytes: number): Promise<Buffer> {
  const tar = pack();
  tar.entry({ name: 'policy.wasm', size: bytes }, Buffer.alloc(bytes));
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks), { level: 9 });
}

/** The lines of one metric family on /metrics (its samples, with their labels). */
async function samples(service: TestService, name: string): Promise<string[]> {
  const text = (await service.http.get('/metrics').expect(200)).text;
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

const tooLargeCount = async (service: TestService) =>
  Number((await samples(service, 'policy_bundle_refusals_total')).find((l) => l.includes('reason="too_large"'))?.split(' ')[1]);

async function eventually(ok: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** The serving policy is rev-1, and the last refusal was for its size. */
async function expectRefusedForSize(service: TestService, message: RegExp): Promise<void> {
  const ready = await service.http.get('/readyz').expect(200);
  expect(ready.body).toMatchObject({ status: 'ready', policyRevision: 'rev-1' });
  expect(ready.body.policyLastError.message).toMatch(message);
  expect(await samples(service, 'policy_revision_info')).toEqual(['policy_revision_info{revision="rev-1"} 1']);
  expect(await samples(service, 'policy_last_load_failure_info')).toEqual([
    'policy_last_load_failure_info{refused_revision="unknown",error="too_large"} 1',
  ]);
}

describe('a bundle server answering more than POLICY_BUNDLE_MAX_BYTES', () => {
  let server: Server;
  let mode: 'bundle' | 'stream' | 'declared' | 'bomb' = 'bundle';
  let bomb: Buffer;
  let service: TestService;
  /** The answers streamed: how much each sent before it finished or the client went away. */
  const streamed: Array<{ bytes: number; closed: boolean }> = [];

  beforeAll(async () => {
    bomb = await gzipBomb(8 * MiB);
    server = createServer((_req, res) => {
      if (mode === 'bundle' || mode === 'bomb') {
        res.writeHead(200, { etag: `"${mode}"`, 'content-type': 'application/gzip' });
        return void res.end(mode === 'bomb' ? bomb : signed);
      }
      // 40 MiB of zeros, 1 MiB every 50 ms: two seconds for the whole answer.
      res.writeHead(200, { etag: '"huge"', ...(mode === 'declared' ? { 'content-length': String(ANSWER_BYTES) } : {}) });
      const answer = { bytes: 0, closed: false };
      streamed.push(answer);
      const timer = setInterval(() => {
        if (answer.bytes >= ANSWER_BYTES) return void res.end();
        res.write(Buffer.alloc(MiB));
        answer.bytes += MiB;
      }, CHUNK_EVERY_MS);
      res.on('close', () => {
        clearInterval(timer);
        answer.closed = true;
      });
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    service = await startService({
      POLICY_BUNDLE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bundles/policy.tar.gz`,
      POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem,
      POLICY_BUNDLE_MAX_BYTES: String(MiB),
      POLICY_BUNDLE_TIMEOUT_MS: '20000',
    });
  });
  afterAll(async () => {
    await service.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('loads a bundle under the cap', async () => {
    expect((await service.http.get('/readyz').expect(200)).body).toMatchObject({ policyRevision: 'rev-1', policyLastError: null });
  });

  it.each([
    ['streamed, with no Content-Length', 'stream' as const],
    ['declared by its Content-Length', 'declared' as const],
  ])('refuses an answer of 40 MiB %s, long before it is all sent, and drops the connection', async (_label, answer) => {
    const before = await tooLargeCount(service);
    mode = answer;
    try {
      const started = Date.now();
      expect(await service.deps.policy.reload()).toBe(false);
      // The whole answer takes 2 s to send, the timeout is 20 s.
      expect(Date.now() - started).toBeLessThan(1000);
      await expectRefusedForSize(service, /the bundle server's answer.* is larger than 1048576 bytes \(POLICY_BUNDLE_MAX_BYTES\)/);
      expect(await tooLargeCount(service)).toBe(before + 1);
      const sent = streamed.at(-1)!;
      await eventually(() => sent.closed);
      expect(sent.closed).toBe(true);
      expect(sent.bytes).toBeLessThan(ANSWER_BYTES / 4);
    } finally {
      mode = 'bundle';
    }
  });

  it('refuses a gzip bomb: a few kilobytes that unpack past four times the cap', async () => {
    expect(bomb.length).toBeLessThan(64 * 1024);
    const before = await tooLargeCount(service);
    mode = 'bomb';
    try {
      expect(await service.deps.policy.reload()).toBe(false);
      await expectRefusedForSize(service, /the bundle unpacks to more than 4194304 bytes/);
      expect(await tooLargeCount(service)).toBe(before + 1);
    } finally {
      mode = 'bundle';
    }
  });
});

describe('a bundle file larger than POLICY_BUNDLE_MAX_BYTES', () => {
  it('is refused by its size, and the loaded policy keeps serving', async () => {
    const live = path.join(work, 'live.tar.gz');
    writeFileSync(live, signed);
    const service = await startService({
      POLICY_BUNDLE_PATH: live,
      POLICY_BUNDLE_PUBLIC_KEY: rsa.publicPem,
      POLICY_BUNDLE_MAX_BYTES: String(MiB),
    });
    try {
      writeFileSync(`${live}.next`, randomBytes(2 * MiB));
      renameSync(`${live}.next`, live);
      expect(await service.deps.policy.reload()).toBe(false);
      await expectRefusedForSize(service, /the bundle file \(2097152 bytes\) is larger than 1048576 bytes/);
    } finally {
      await service.close();
    }
  });

  it.each(['lots', '100', String(2 * 1024 * MiB)])('POLICY_BUNDLE_MAX_BYTES=%s is refused at start', (value) => {
    expect(() => loadConfig({ POLICY_BUNDLE_MAX_BYTES: value })).toThrow(/POLICY_BUNDLE_MAX_BYTES/);
  });
});
