import { startedServiceWith } from '../support/service';
import { attenuate, grantWorld, postGrant } from '../support/grant-world';

/**
 * What one installed agent can make (issue 8, §4): before, nothing bounded the children an agent
 * created (282 in seconds). Live children of a grant are capped, and so are attenuation requests
 * per agent per window.
 */
const { service, world } = startedServiceWith(grantWorld, () => ({
  overrides: { MAX_LIVE_CHILDREN_PER_GRANT: '3', ATTENUATION_RATE_LIMIT: '8', ATTENUATION_RATE_WINDOW_MS: '60000' },
}));

describe('bounds on attenuation', () => {
  it('caps live children of a grant at MAX_LIVE_CHILDREN_PER_GRANT; a revoked child frees its slot', async () => {
    const parent = await postGrant(service, world, {}).expect(201);
    const children = [];
    for (let i = 0; i < 3; i += 1) children.push((await attenuate(service, world.helper, parent.body.id).expect(201)).body.id);
    const refused = await attenuate(service, world.helper, parent.body.id);
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 422, code: 'too_many_children' });
    await service.http.post(`/api/grants/${children[0]}/revoke`).set(world.owner.auth).expect(200);
    await attenuate(service, world.helper, parent.body.id).expect(201);
    // Grandchildren count at their own parent, not at the grant above.
    await attenuate(service, world.helper, children[1]!).expect(201);
  });

  it('answers 429 rate_limited with Retry-After past ATTENUATION_RATE_LIMIT requests, for that agent only', async () => {
    const parent = await postGrant(service, world, {}).expect(201);
    const answers = [];
    // Refused requests count too: a widening is judged only after the agent's quota.
    for (let i = 0; i < 10; i += 1) answers.push(await attenuate(service, world.bot, parent.body.id, { budget: { calls: 10 ** 8 } }));
    expect(answers.slice(0, 8).map((r) => r.status)).toEqual(Array(8).fill(422));
    for (const res of answers.slice(8)) {
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 429, code: 'rate_limited' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    const other = await postGrant(service, world, {}).expect(201);
    // Another agent is not affected.
    const child = await attenuate(service, world.helper, other.body.id).expect(201);
    expect(child.body.parentId).toBe(other.body.id);
  });
});
