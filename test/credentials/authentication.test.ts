import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { revokeBrokerTokens } from '../../src/admin/brokers';
import { mintToken } from '../../src/credentials/tokens';
import type { Route } from '../../src/kernel/route';
import { allRoutes } from '../support/routes';
import { decisionsWritten, humanToken, newUserId, startService, type TestService } from '../support/service';
import { broker, human, installAgent, podWith, type Human } from '../support/world';
import { AUTHENTICATED_NON_HUMAN, forgeJwt, inOneHour, probeNonHuman, UNAUTHENTICATED } from '../support/credentials';

let service: TestService;
let owner: Human;
let podId: string;
/** Every secret these tests send; none may ever appear in a log line. */
const secretsSent: string[] = [];

beforeAll(async () => {
  service = await startService();
  owner = human(service, 'owner');
  podId = await podWith(service, owner);
  secretsSent.push(owner.token);
});
afterAll(() => service.close());

/** GET a pod the owner can read: 200 with a good credential, so any refusal is the credential's. */
function readPod(authorization?: string) {
  const req = service.http.get(`/api/pods/${podId}`);
  return authorization === undefined ? req : req.set('Authorization', authorization);
}

function expectUnauthenticated(res: { status: number; body: { code: string }; headers: Record<string, string> }) {
  expect(res.status).toBe(401);
  expect(res.body.code).toBe('unauthenticated');
  expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
}

describe('human JWTs (CONTRACT §2)', () => {
  it('accepts the owner with a valid HS256 token (the control for every refusal below)', async () => {
    const res = await readPod(`Bearer ${owner.token}`);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(podId);
  });

  it('accepts the Bearer scheme in any case (RFC 9110: schemes are case-insensitive)', async () => {
    expect((await readPod(`bearer ${owner.token}`)).status).toBe(200);
  });

  it('refuses a request without an Authorization header', async () => {
    expectUnauthenticated(await readPod());
  });

  it.each([
    ['another scheme', () => `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['no token', () => 'Bearer'],
    ['two tokens', () => `Bearer ${owner.token} ${owner.token}`],
    ['characters a token never has', () => 'Bearer abc$def'],
    ['not a JWT', () => 'Bearer not-a-jwt'],
  ])('refuses a malformed header: %s', async (_label, header) => {
    expectUnauthenticated(await readPod(header()));
  });

  it('refuses an expired JWT', async () => {
    const expired = jwt.sign({ exp: Math.floor(Date.now() / 1000) - 60 }, service.config.JWT_SECRET, { subject: owner.userId });
    secretsSent.push(expired);
    expectUnauthenticated(await readPod(`Bearer ${expired}`));
  });

  it('refuses a JWT whose signature was tampered with', async () => {
    const [header, claims] = owner.token.split('.');
    const other = humanToken(service.config, newUserId('other'));
    const tampered = `${header}.${claims}.${other.split('.')[2]}`;
    expectUnauthenticated(await readPod(`Bearer ${tampered}`));
  });

  it('refuses a JWT whose claims were changed after signing', async () => {
    const [header, , signature] = owner.token.split('.');
    const claims = Buffer.from(JSON.stringify({ sub: 'mallory', exp: inOneHour() })).toString('base64url');
    expectUnauthenticated(await readPod(`Bearer ${header}.${claims}.${signature}`));
  });

  it('refuses an HS256 JWT signed with a different secret', async () => {
    const token = jwt.sign({}, 'a-completely-different-secret-of-enough-length', { subject: owner.userId, expiresIn: '1h' });
    expectUnauthenticated(await readPod(`Bearer ${token}`));
  });

  it('refuses an `alg: none` JWT, with or without a signature part', async () => {
    const claims = { sub: owner.userId, exp: inOneHour() };
    expectUnauthenticated(await readPod(`Bearer ${forgeJwt({ alg: 'none', typ: 'JWT' }, claims)}`));
    expectUnauthenticated(await readPod(`Bearer ${forgeJwt({ alg: 'none' }, claims, service.config.JWT_SECRET)}`));
    expectUnauthenticated(await readPod(`Bearer ${forgeJwt({ alg: 'None' }, claims)}`));
  });

  it('refuses an RS256 JWT while the service verifies HS256 (no algorithm switching)', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = jwt.sign({}, privateKey, { algorithm: 'RS256', subject: owner.userId, expiresIn: '1h' });
    expectUnauthenticated(await readPod(`Bearer ${token}`));
  });

  it('refuses a correctly signed JWT without exp', async () => {
    const token = jwt.sign({ sub: owner.userId }, service.config.JWT_SECRET, { algorithm: 'HS256' });
    secretsSent.push(token);
    expectUnauthenticated(await readPod(`Bearer ${token}`));
  });

  it('refuses a correctly signed JWT without sub, or with an empty one', async () => {
    const noSub = jwt.sign({}, service.config.JWT_SECRET, { algorithm: 'HS256', expiresIn: '1h' });
    const emptySub = jwt.sign({ sub: '' }, service.config.JWT_SECRET, { algorithm: 'HS256', expiresIn: '1h' });
    secretsSent.push(noSub, emptySub);
    expectUnauthenticated(await readPod(`Bearer ${noSub}`));
    expectUnauthenticated(await readPod(`Bearer ${emptySub}`));
  });

  it('refuses a subject that looks like a service id (a human cannot pose as a seat)', async () => {
    const token = humanToken(service.config, 'agt_01jd0000000000000000000000');
    expectUnauthenticated(await readPod(`Bearer ${token}`));
  });

  it('refuses a JWT that is not valid yet (nbf in the future)', async () => {
    const token = jwt.sign({}, service.config.JWT_SECRET, { subject: owner.userId, expiresIn: '2h', notBefore: '1h' });
    expectUnauthenticated(await readPod(`Bearer ${token}`));
  });
});

describe('agent runtime tokens and broker tokens (CONTRACT §2)', () => {
  it('refuses an art_ token of valid shape that was never issued', async () => {
    expect(await probeNonHuman(service, mintToken('art'))).toEqual(UNAUTHENTICATED);
  });

  it('refuses a real token whose checksum is wrong', async () => {
    const agent = await installAgent(service, owner, podId, 'checksum-bot');
    secretsSent.push(agent.token);
    expect(await probeNonHuman(service, agent.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    const last = agent.token.at(-1);
    const broken = `${agent.token.slice(0, -1)}${last === 'a' ? 'b' : 'a'}`;
    expect(await probeNonHuman(service, broken)).toEqual(UNAUTHENTICATED);
    expect(await probeNonHuman(service, agent.token.slice(0, -1))).toEqual(UNAUTHENTICATED);
  });

  it('refuses a deleted runtime token on the very next request', async () => {
    const agent = await installAgent(service, owner, podId, 'deleted-token-bot');
    secretsSent.push(agent.token);
    expect(await probeNonHuman(service, agent.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    await service.http
      .delete(`/api/registry/pods/${podId}/agents/${agent.name}/runtime-tokens/${agent.tokenId}`)
      .set(owner.auth)
      .expect(204);
    expect(await probeNonHuman(service, agent.token)).toEqual(UNAUTHENTICATED);
  });

  it("refuses an uninstalled agent's token", async () => {
    const agent = await installAgent(service, owner, podId, 'uninstalled-bot');
    secretsSent.push(agent.token);
    expect(await probeNonHuman(service, agent.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    await service.http.delete(`/api/registry/pods/${podId}/agents/${agent.name}`).set(owner.auth).expect(204);
    expect(await probeNonHuman(service, agent.token)).toEqual(UNAUTHENTICATED);
  });

  it('refuses an agent token on a human endpoint with 403 credential_not_accepted', async () => {
    const agent = await installAgent(service, owner, podId, 'wrong-kind-bot');
    secretsSent.push(agent.token);
    const res = await service.http.post('/api/pods').set(agent.auth).send({ name: 'by an agent' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('credential_not_accepted');
    const read = await service.http.get(`/api/pods/${podId}`).set(agent.auth);
    expect(read.status).toBe(403);
    expect(read.body.code).toBe('credential_not_accepted');
  });

  it('refuses a broker token on a human endpoint with 403 credential_not_accepted', async () => {
    const registered = await broker(service, 'wrong-kind-broker');
    secretsSent.push(registered.token);
    const res = await service.http.post('/api/pods').set(registered.auth).send({ name: 'by a broker' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('credential_not_accepted');
  });

  it('refuses a revoked broker token, and a bkt_ token that was never issued', async () => {
    const registered = await broker(service, 'revoked-broker');
    secretsSent.push(registered.token);
    expect(await probeNonHuman(service, registered.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    await revokeBrokerTokens(service.deps.db, registered.id);
    expect(await probeNonHuman(service, registered.token)).toEqual(UNAUTHENTICATED);
    expect(await probeNonHuman(service, mintToken('bkt'))).toEqual(UNAUTHENTICATED);
  });
});

describe('wrong-kind credentials on every route (iterates allRoutes)', () => {
  const kinds = ['human', 'agent', 'broker'] as const;
  const cases = allRoutes
    .filter((route) => route.auth !== null)
    .flatMap((route) =>
      kinds
        .filter((kind) => !route.auth!.kinds.includes(kind))
        .map((kind) => [`${route.method.toUpperCase()} ${route.path}`, kind, route] as const),
    );
  let credentials: Record<(typeof kinds)[number], string>;

  beforeAll(async () => {
    const agent = await installAgent(service, owner, podId, 'every-route-bot');
    const registered = await broker(service, 'every-route-broker');
    credentials = { human: owner.token, agent: agent.token, broker: registered.token };
    secretsSent.push(agent.token, registered.token);
  });

  // Credentials are checked first, so placeholder path values and an empty body are enough.
  const urlOf = (route: Route) => route.path.replace(/:(\w+)/g, (_m, name: string) => `placeholder-${name}`);

  it.each(cases)('%s refuses a valid %s credential: 403 credential_not_accepted', async (_label, kind, route) => {
    const res = await service.http[route.method](urlOf(route)).set('Authorization', `Bearer ${credentials[kind]}`).send({});
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'credential_not_accepted' });
  });

  it.each(allRoutes.filter((route) => route.auth !== null).map((route) => [`${route.method.toUpperCase()} ${route.path}`, route] as const))(
    '%s refuses a request without credentials: 401',
    async (_label, route) => {
      expectUnauthenticated(await service.http[route.method](urlOf(route)).send({}));
    },
  );
});

describe('logs', () => {
  it('never contain a JWT, a runtime token or a broker token (run last: it reads every line so far)', async () => {
    // One more authenticated run of the management endpoints, member and all.
    const member = human(service, 'member');
    secretsSent.push(member.token);
    await service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: member.userId, role: 'member' }).expect(201);
    await service.http.get(`/api/pods/${podId}/members`).set(member.auth).expect(200);
    const agent = await installAgent(service, owner, podId, 'log-bot');
    secretsSent.push(agent.token);
    await service.http.get(`/api/registry/pods/${podId}/agents/${agent.name}/runtime-tokens`).set(owner.auth).expect(200);

    await decisionsWritten();
    const text = service.logs.join('');
    expect(service.logs.length).toBeGreaterThan(20);
    expect(text).toContain('"msg":"decision"');
    expect(secretsSent.length).toBeGreaterThan(8);
    for (const secret of secretsSent) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/art_[0-9A-Za-z]{46}/);
    expect(text).not.toMatch(/bkt_[0-9A-Za-z]{46}/);
    expect(text).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\./);
    expect(text).not.toContain(service.config.JWT_SECRET);
  });
});
