import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { bearer, newUserId, startService, type TestService } from '../support/service';
import { forgeJwt, inOneHour } from '../support/credentials';
import { signedPolicyEnv } from '../support/policy-bundles';

/**
 * Production mode (CONTRACT §2): human JWTs verified against the keys of a JWKS URL, asymmetric
 * algorithms only. A tiny local HTTP server plays the identity provider.
 */
const KID = 'test-key-1';
const ISSUER = 'https://idp.test/';
const AUDIENCE = 'grant-broker';

let jwksServer: Server;
let service: TestService;
let privateKey: KeyObject;
let publicKey: KeyObject;

/** A production service (signed policy bundle) verifying human JWTs against this key set URL. */
function productionService(jwksUri: string): Promise<TestService> {
  return startService({ NODE_ENV: 'production', ...signedPolicyEnv(), JWT_JWKS_URI: jwksUri, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE });
}

beforeAll(async () => {
  ({ privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 }));
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };
  jwksServer = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const { port } = jwksServer.address() as AddressInfo;
  service = await productionService(`http://127.0.0.1:${port}/.well-known/jwks.json`);
});
afterAll(async () => {
  await service.close();
  await new Promise((resolve) => jwksServer.close(resolve));
});

function rs256(claims: object, options: jwt.SignOptions = {}, key: KeyObject = privateKey): string {
  const defaults: jwt.SignOptions = { algorithm: 'RS256', keyid: KID, issuer: ISSUER, audience: AUDIENCE, subject: newUserId('idp-user') };
  // An `exp` in the claims, or `noExpiry`, replaces the default one-hour lifetime.
  const expiry: jwt.SignOptions = 'exp' in claims || 'noExpiry' in claims ? {} : { expiresIn: '1h' };
  const { noExpiry: _ignored, ...payload } = claims as { noExpiry?: boolean };
  return jwt.sign(payload, key, { ...defaults, ...expiry, ...options });
}

async function createPod(token: string) {
  return service.http.post('/api/pods').set(bearer(token)).send({ name: 'JWKS pod' });
}

function expectUnauthenticated(res: { status: number; body: { code: string } }) {
  expect(res.status).toBe(401);
  expect(res.body.code).toBe('unauthenticated');
}

describe('human JWTs verified with a JWKS', () => {
  it('accepts an RS256 token signed by a key of the JWKS', async () => {
    const sub = newUserId('jwks-owner');
    const res = await createPod(rs256({}, { subject: sub }));
    expect(res.status).toBe(201);
    expect(res.body.createdBy).toBe(sub);
  });

  it('refuses algorithm confusion: an HS256 token whose HMAC secret is the public key', async () => {
    const claims = { sub: newUserId('mallory'), iss: ISSUER, aud: AUDIENCE, exp: inOneHour() };
    const pem = publicKey.export({ type: 'spki', format: 'pem' });
    const der = publicKey.export({ type: 'spki', format: 'der' });
    expectUnauthenticated(await createPod(forgeJwt({ alg: 'HS256', typ: 'JWT', kid: KID }, claims, pem)));
    expectUnauthenticated(await createPod(forgeJwt({ alg: 'HS256', typ: 'JWT', kid: KID }, claims, der)));
  });

  it('refuses an `alg: none` token naming a key of the JWKS', async () => {
    const claims = { sub: newUserId('mallory'), iss: ISSUER, aud: AUDIENCE, exp: inOneHour() };
    expectUnauthenticated(await createPod(forgeJwt({ alg: 'none', kid: KID }, claims)));
  });

  it('refuses an HS256 token signed with JWT_SECRET: production does not use the shared secret', async () => {
    const token = jwt.sign({}, service.config.JWT_SECRET, {
      subject: newUserId('dev'),
      expiresIn: '1h',
      issuer: ISSUER,
      audience: AUDIENCE,
    });
    expectUnauthenticated(await createPod(token));
  });

  it('refuses an RS256 token signed by a key that is not in the JWKS, even with a known kid', async () => {
    const { privateKey: strangerKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expectUnauthenticated(await createPod(rs256({}, {}, strangerKey)));
  });

  it('refuses a wrong issuer, a wrong audience, an expired token and a token without exp', async () => {
    expectUnauthenticated(await createPod(rs256({}, { issuer: 'https://evil.test/' })));
    expectUnauthenticated(await createPod(rs256({}, { audience: 'someone-else' })));
    expectUnauthenticated(await createPod(rs256({ exp: Math.floor(Date.now() / 1000) - 60 })));
    expectUnauthenticated(await createPod(rs256({ noExpiry: true })));
  });
});

describe('an identity provider that cannot be reached', () => {
  it('answers 503 dependency_unavailable, not 401, and allows nothing', async () => {
    const down = createServer((_req, res) => res.writeHead(500).end('unavailable'));
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const { port } = down.address() as AddressInfo;
    const cut = await productionService(`http://127.0.0.1:${port}/jwks.json`);
    try {
      const failing = await cut.http
        .post('/api/pods')
        .set(bearer(rs256({})))
        .send({ name: 'x' });
      expect({ status: failing.status, code: failing.body.code }).toEqual({ status: 503, code: 'dependency_unavailable' });
      await new Promise((resolve) => down.close(resolve));
      const refused = await cut.http
        .post('/api/pods')
        .set(bearer(rs256({})))
        .send({ name: 'x' });
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 503, code: 'dependency_unavailable' });
    } finally {
      await cut.close();
    }
  });
});

describe('a key set that becomes unreachable after a first successful fetch', () => {
  it('answers 503, not 401, for a token whose kid was never seen, and still takes the known key', async () => {
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };
    let up = true;
    const flaky = createServer((_req, res) => {
      if (!up) return void res.socket?.destroy();
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    const { port } = flaky.address() as AddressInfo;
    const cut = await productionService(`http://127.0.0.1:${port}/jwks.json`);
    try {
      expect(
        (
          await cut.http
            .post('/api/pods')
            .set(bearer(rs256({})))
            .send({ name: 'x' })
        ).status,
      ).toBe(201);
      up = false;
      const { privateKey: rotated } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      // A dozen unseen kids: past the JWKS client's own rate limit too, every one is a 503.
      for (let i = 0; i < 12; i += 1) {
        const unseen = await cut.http
          .post('/api/pods')
          .set(bearer(rs256({}, { keyid: `rotated-${i}` }, rotated)))
          .send({ name: 'x' });
        expect({ i, status: unseen.status, code: unseen.body.code }).toEqual({ i, status: 503, code: 'dependency_unavailable' });
      }
      expect(
        (
          await cut.http
            .post('/api/pods')
            .set(bearer(rs256({})))
            .send({ name: 'x' })
        ).status,
      ).toBe(201);
    } finally {
      await cut.close();
      await new Promise((resolve) => flaky.close(resolve));
    }
  });
});

describe('a key set that answers, past the JWKS client’s rate limit', () => {
  it('answers 401, not 503, for unseen kids, and still takes a published key not asked for before', async () => {
    // Two published keys; the second is first used after the flood, when no fetch is allowed.
    const { privateKey: secondKey, publicKey: secondPublic } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keys = [
      { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' },
      { ...secondPublic.export({ format: 'jwk' }), kid: 'test-key-2', alg: 'RS256', use: 'sig' },
    ];
    let fetches = 0;
    const idp = createServer((_req, res) => {
      fetches += 1;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys }));
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    const { port } = idp.address() as AddressInfo;
    const cut = await productionService(`http://127.0.0.1:${port}/jwks.json`);
    try {
      const { privateKey: forger } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      // 15 forged kids: the first 10 are looked up in a fresh fetch each, the rest are held back
      // by the rate limit and judged by the key set fetched moments ago. All are refused alike.
      for (let i = 0; i < 15; i += 1) {
        const forged = await cut.http
          .post('/api/pods')
          .set(bearer(rs256({}, { keyid: `forged-${i}` }, forger)))
          .send({ name: 'x' });
        expect({ i, status: forged.status, code: forged.body.code }).toEqual({ i, status: 401, code: 'unauthenticated' });
      }
      expect(fetches).toBe(10);
      const second = await cut.http
        .post('/api/pods')
        .set(bearer(rs256({}, { keyid: 'test-key-2' }, secondKey)))
        .send({ name: 'x' });
      expect(second.status).toBe(201);
      // Signed by another key under a published kid: still refused.
      expectUnauthenticated(
        await cut.http
          .post('/api/pods')
          .set(bearer(rs256({}, { keyid: 'test-key-2' }, forger)))
          .send({ name: 'x' }),
      );
      expect(fetches).toBe(10);
    } finally {
      await cut.close();
      await new Promise((resolve) => idp.close(resolve));
    }
  });
});
