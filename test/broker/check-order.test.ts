import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { revokeBrokerTokens } from '../../src/admin/brokers';
import { mintToken } from '../../src/credentials/tokens';
import { signedPolicyEnv } from '../support/policy-bundles';
import { newUserId, type TestService, startedServiceWith, startService } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';

/**
 * The broker check judges a request in one order: the broker credential, the body, whether the
 * grant is the broker's own, then the subject and the rest. Nobody learns anything from a later
 * step before passing the earlier ones.
 */
const { service, world } = startedServiceWith(brokerWorld);

const check = (auth: { Authorization: string }) => service.http.post('/api/broker/check').set(auth);

describe('broker check: authenticate, then ownership, then everything else', () => {
  it('answers a well-formed but unknown broker token with 401 whatever the body', async () => {
    const forged = { Authorization: `Bearer ${mintToken('bkt')}` };
    for (const body of [{}, { grantId: 7 }, 'not json']) {
      const res = await check(forged)
        .set('Content-Type', 'application/json')
        .send(typeof body === 'string' ? body : JSON.stringify(body));
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: 'unauthenticated' });
    }
    const wrongType = await check(forged).set('Content-Type', 'text/plain').send('x');
    expect(wrongType.status).toBe(401);
  });

  it("answers another broker's grant with 404 even when the subject token is bogus", async () => {
    const { rootId } = await chainOf(service, world, 0);
    const other = await broker(service, 'nosy-broker');
    const res = await checkAs(service, { broker: other }, rootId, { ...world.agent, token: 'art_bogus' });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'not_found' });
    const unknown = await checkAs(service, { broker: other }, 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', { ...world.agent, token: 'art_bogus' });
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: 'not_found' });
    // The own broker with the same bogus subject: the subject is judged, 401.
    const own = await checkAs(service, world, rootId, { ...world.agent, token: 'art_bogus' });
    expect({ status: own.status, code: own.body.code }).toEqual({ status: 401, code: 'subject_token_invalid' });
  });

  it('refuses a revoked broker token with 401 on its own grants, unknown grants and other brokers’ grants alike', async () => {
    const local = await brokerWorld(service);
    const { rootId } = await chainOf(service, local, 0);
    const { rootId: foreignId } = await chainOf(service, world, 0);
    // Warm every cache: the token is remembered by this replica and under the tree's version.
    expect((await checkAs(service, local, rootId, local.agent)).body.decision).toBe('allow');
    expect((await checkAs(service, local, foreignId, local.agent)).status).toBe(404);
    await revokeBrokerTokens(service.deps.db, local.broker.id);
    await service.deps.invalidation.touch('broker', local.broker.id);
    for (const grantId of [rootId, foreignId, 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab']) {
      const res = await checkAs(service, local, grantId, local.agent);
      expect({ grantId, status: res.status, code: res.body.code }).toEqual({ grantId, status: 401, code: 'unauthenticated' });
    }
  });
});

describe("another broker's grant: the subject is never looked at", () => {
  it('answers 404 where verifying the subject would have failed with a 503 (JWKS down, unseen kid)', async () => {
    // A production replica on the same database whose identity provider is down: verifying a
    // JWT with a kid it has never seen is a 503 (CONTRACT §2), a failure a nosy broker could tell
    // apart from the 404 of a grant that does not exist.
    const down = createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const settings = { JWT_ISSUER: 'https://idp.test/', JWT_AUDIENCE: 'grant-broker' };
    const jwksUri = `http://127.0.0.1:${(down.address() as AddressInfo).port}/jwks.json`;
    let production: TestService | undefined;
    try {
      production = await startService({ NODE_ENV: 'production', ...signedPolicyEnv(), JWT_JWKS_URI: jwksUri, ...settings });
      const { rootId } = await chainOf(service, world, 0);
      const nosy = await broker(service, 'nosy-broker');
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const unseenKid = jwt.sign({}, privateKey, {
        algorithm: 'RS256',
        keyid: 'never-seen',
        issuer: settings.JWT_ISSUER,
        audience: settings.JWT_AUDIENCE,
        subject: newUserId('idp-user'),
        expiresIn: '1h',
      });
      const subject = { ...world.agent, token: unseenKid };

      const foreign = await checkAs(production, { broker: nosy }, rootId, subject);
      expect({ status: foreign.status, code: foreign.body.code }).toEqual({ status: 404, code: 'not_found' });
      const unknown = await checkAs(production, { broker: nosy }, 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab', subject);
      expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: 'not_found' });
      // The grant's own broker does get the subject verified, and learns the JWKS is away.
      const own = await checkAs(production, world, rootId, subject);
      expect({ status: own.status, code: own.body.code }).toEqual({ status: 503, code: 'dependency_unavailable' });
    } finally {
      await production?.close();
      await new Promise((resolve) => down.close(resolve));
    }
  });

  it('leaves the forwarded runtime token untouched: its lastUsedAt stays unset', async () => {
    const local = await brokerWorld(service);
    const { rootId } = await chainOf(service, local, 0);
    const nosy = await broker(service, 'nosy-broker');
    const lastUsed = async () =>
      (await service.deps.db('runtime_tokens').where('id', local.agent.tokenId).first<{ last_used_at: Date | null }>('last_used_at'))!
        .last_used_at;
    expect(await lastUsed()).toBeNull();

    const foreign = await checkAs(service, { broker: nosy }, rootId, local.agent);
    expect({ status: foreign.status, code: foreign.body.code }).toEqual({ status: 404, code: 'not_found' });
    // The look-up marks a token used without being awaited: give such a write time to land.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await lastUsed()).toBeNull();

    // The probe can see a look-up: the own broker's check verifies the token and marks it used.
    expect((await checkAs(service, local, rootId, local.agent)).body.decision).toBe('allow');
    const deadline = Date.now() + 5000;
    while ((await lastUsed()) === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await lastUsed()).toBeInstanceOf(Date);
  });
});
