import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * OPA bundles for tests, made by the pinned opa as `npm run build:policy` makes them (built,
 * signed, re-signed after a change), and a real HTTP bundle server to publish them on.
 */
const root = path.resolve(__dirname, '../..');
const opa = path.join(root, '.tools/bin/opa');

/** A directory removed when the test process ends. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A key pair: the private key as a PEM file (what opa signs with), the public key as PEM text. */
export function keyPair(dir: string, type: 'rsa' | 'ec') {
  const pair = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const privateFile = path.join(dir, `${type}-${Math.random().toString(36).slice(2)}.pem`);
  writeFileSync(privateFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return { privateFile, publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

/** The service's policy as a bundle, by scripts/build-policy.mjs (POLICY_SIGNING_KEY, POLICY_REVISION… in env). */
export function buildBundle(dir: string, name: string, env: Record<string, string> = {}): Buffer {
  const out = path.join(dir, `${name}.tar.gz`);
  execFileSync(process.execPath, [path.join(root, 'scripts/build-policy.mjs')], {
    env: { ...process.env, POLICY_BUILD_OUT: path.join(dir, `${name}.wasm`), POLICY_BUNDLE_OUT: out, ...env },
    stdio: 'ignore',
  });
  return readFileSync(out);
}

/**
 * The bundle unpacked, changed by `change` (files by name, without a leading `/`), packed again;
 * re-signed with `opa sign` when `resign` names a key, so the signature covers what is there now.
 */
export function repack(bundle: Buffer, change: (dir: string) => void, resign?: { key: string; alg?: string }): Buffer {
  const work = mkdtempSync(path.join(tmpdir(), 'repack-'));
  try {
    const dir = path.join(work, 'bundle');
    mkdirSync(dir);
    writeFileSync(path.join(work, 'in.tar.gz'), bundle);
    execFileSync('tar', ['-xzf', path.join(work, 'in.tar.gz'), '-C', dir], { stdio: 'ignore' });
    change(dir);
    if (resign) {
      rmSync(path.join(dir, '.signatures.json'), { force: true });
      execFileSync(opa, ['sign', '--signing-key', resign.key, '--signing-alg', resign.alg ?? 'RS256', '--bundle', '.', '-o', '.'], {
        cwd: dir,
        stdio: 'ignore',
      });
    }
    execFileSync('tar', ['-czf', path.join(work, 'out.tar.gz'), '.'], { cwd: dir });
    return readFileSync(path.join(work, 'out.tar.gz'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The bundle under another manifest revision and issued-at (`metadata.issued_at`; none when
 * undefined), re-signed with `key`, or left unsigned without one: bundles of any age, in seconds.
 */
export function reissued(bundle: Buffer, claim: { revision: string; issuedAt?: string }, key?: string): Buffer {
  return repack(
    bundle,
    (dir) => {
      const file = path.join(dir, '.manifest');
      const { metadata, ...manifest } = JSON.parse(readFileSync(file, 'utf8')) as { metadata?: object; revision?: string };
      manifest.revision = claim.revision;
      const dated = claim.issuedAt === undefined ? {} : { metadata: { ...metadata, issued_at: claim.issuedAt } };
      writeFileSync(file, JSON.stringify({ ...manifest, ...dated }));
      if (!key) rmSync(path.join(dir, '.signatures.json'), { force: true });
    },
    key ? { key } : undefined,
  );
}

/** A bundle server as OPA's bundle plugin expects one: ETag, 304 on If-None-Match; or a 500. */
export async function bundleServer(initial: Buffer, tag: string) {
  let current = initial;
  let etag = `"${tag}"`;
  let failing = false;
  const statuses: number[] = [];
  const server: Server = createServer((req, res) => {
    const status = failing ? 500 : req.headers['if-none-match'] === etag ? 304 : 200;
    statuses.push(status);
    res.writeHead(status, status === 200 ? { etag, 'content-type': 'application/gzip' } : {});
    res.end(status === 200 ? current : undefined);
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bundles/policy.tar.gz`,
    statuses,
    publish(bundle: Buffer, newTag: string) {
      current = bundle;
      etag = `"${newTag}"`;
    },
    fail(value: boolean) {
      failing = value;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const PRODUCTION_SECRET = 'hs256-policy-signing-secret-for-production-mode-tests';
let productionBundle: string | undefined;

/**
 * What a production-mode test service needs to start: production loads only a signed bundle, so
 * the service's own policy, signed HS256, and the secret that verifies it. Built once per process.
 */
export function signedPolicyEnv(): { POLICY_BUNDLE_PATH: string; POLICY_BUNDLE_SECRET: string } {
  if (!productionBundle) {
    const dir = scratchDir('production-policy-');
    buildBundle(dir, 'signed', { POLICY_SIGNING_KEY: PRODUCTION_SECRET, POLICY_SIGNING_ALG: 'HS256' });
    productionBundle = path.join(dir, 'signed.tar.gz');
  }
  return { POLICY_BUNDLE_PATH: productionBundle, POLICY_BUNDLE_SECRET: PRODUCTION_SECRET };
}
