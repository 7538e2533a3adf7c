import { revokeBrokerTokens } from '../../src/admin/brokers';
import { mintToken } from '../../src/credentials/tokens';
import { startService, type TestService } from '../support/service';
import { broker } from '../support/world';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';

/**
 * The broker check judges a request in one order: the broker credential, the body, whether the
 * grant is the broker's own, then the subject and the rest. Nobody learns anything from a later
 * step before passing the earlier ones.
 */
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

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
