import { startService, type TestService } from '../support/service';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';

/**
 * The check's `grantVersion`: the same while nothing about the grant's tree changes, another once
 * something does (what a gateway keys its kept listing by).
 */
let service: TestService;
let world: BrokerWorld;
beforeAll(async () => {
  service = await startService();
  world = await brokerWorld(service);
});
afterAll(() => service.close());

it('stays while the tree is unchanged, moves with a revocation in it, and is the same for every grant of the tree', async () => {
  const { rootId, leafId, ids } = await chainOf(service, world, 2);
  const first = await checkAs(service, world, leafId, world.agent).expect(200);
  const again = await checkAs(service, world, leafId, world.agent).expect(200);
  expect(first.body).toMatchObject({ decision: 'allow', grantVersion: expect.any(String) });
  expect(again.body.grantVersion).toBe(first.body.grantVersion);
  expect((await checkAs(service, world, rootId, world.agent).expect(200)).body.grantVersion).toBe(first.body.grantVersion);

  await service.http.post(`/api/grants/${ids[1]}/revoke`).set(world.owner.auth).expect(200);
  const after = await checkAs(service, world, leafId, world.agent).expect(200);
  expect(after.body).toMatchObject({ decision: 'deny', reason: 'revoked', grantVersion: expect.any(String) });
  expect(after.body.grantVersion).not.toBe(first.body.grantVersion);
});

it("says nothing of another broker's grant", async () => {
  const { rootId } = await chainOf(service, world, 0);
  const other = await (await import('../support/world')).broker(service, 'other-version-broker');
  const res = await checkAs(service, { broker: other }, rootId, world.agent);
  expect(res.status).toBe(404);
  expect(res.body.grantVersion).toBeUndefined();
});
