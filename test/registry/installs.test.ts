import { hashToken } from '../../src/credentials/tokens';
import { expectProblem } from '../support/problems';
import { ManualClock } from '../support/clock';
import { startService, type TestService } from '../support/service';
import { installAgent, podWithEveryRole, type Human } from '../support/world';
import { AUTHENTICATED_NON_HUMAN, probeNonHuman, UNAUTHENTICATED } from '../support/credentials';

/** Agent install/uninstall and runtime tokens (CONTRACT §3, §6; spec §4.3). */
/** A token's expiry is reached by moving this clock, not by sleeping. */
const clock = new ManualClock();
let service: TestService;
let owner: Human;
let admin: Human;
let member: Human;
let outsider: Human;
let podId: string;

beforeAll(async () => {
  service = await startService({}, { clock });
  ({ owner, admin, member, outsider, podId } = await podWithEveryRole(service));
});
afterAll(() => service.close());

const agents = () => `/api/registry/pods/${podId}/agents`;
const tokens = (name: string) => `${agents()}/${name}/runtime-tokens`;

describe('POST /api/registry/pods/:podId/agents (install)', () => {
  it('installs an agent: a seat (agt_…) that is a pod member of kind agent', async () => {
    const res = await service.http.post(agents()).set(owner.auth).send({ name: 'review-bot', displayName: 'Review bot' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      podId,
      name: 'review-bot',
      agentId: expect.stringMatching(/^agt_/),
      displayName: 'Review bot',
      description: null,
      installedBy: owner.userId,
      runtime: { desiredState: 'running', state: 'starting' },
    });
    const members = await service.http.get(`/api/pods/${podId}/members`).set(member.auth).expect(200);
    expect(members.body.items).toContainEqual(expect.objectContaining({ memberId: res.body.agentId, kind: 'agent', role: 'member' }));
  });

  it('lets an admin install too', async () => {
    expect((await service.http.post(agents()).set(admin.auth).send({ name: 'admin-bot' })).status).toBe(201);
  });

  it('refuses a second agent of the same name (409 agent_exists)', async () => {
    await service.http.post(agents()).set(owner.auth).send({ name: 'twin' }).expect(201);
    expectProblem(await service.http.post(agents()).set(admin.auth).send({ name: 'twin' }), 409, 'agent_exists');
  });

  it('refuses a plain member (403 not_pod_admin) and an outsider (404)', async () => {
    expectProblem(await service.http.post(agents()).set(member.auth).send({ name: 'member-bot' }), 403, 'not_pod_admin');
    expectProblem(await service.http.post(agents()).set(outsider.auth).send({ name: 'outsider-bot' }), 404, 'not_found');
  });

  it('refuses a bad name and unknown fields (400)', async () => {
    expectProblem(await service.http.post(agents()).set(owner.auth).send({ name: 'Bad Name' }), 400, 'invalid_request');
    expectProblem(await service.http.post(agents()).set(owner.auth).send({ name: 'ok-name', agentId: 'agt_x' }), 400, 'invalid_request');
  });
});

describe('DELETE /api/registry/pods/:podId/agents/:name (uninstall)', () => {
  it('uninstalls: 204, its tokens stop working, it leaves the pod, and it is gone', async () => {
    const agent = await installAgent(service, owner, podId, 'leaving-bot');
    expect(await probeNonHuman(service, agent.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    const res = await service.http.delete(`${agents()}/leaving-bot`).set(admin.auth);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await probeNonHuman(service, agent.token)).toEqual(UNAUTHENTICATED);
    const members = await service.http.get(`/api/pods/${podId}/members`).set(owner.auth).expect(200);
    expect(members.body.items.map((m: { memberId: string }) => m.memberId)).not.toContain(agent.agentId);
    expectProblem(await service.http.delete(`${agents()}/leaving-bot`).set(owner.auth), 404, 'not_found');
    expectProblem(await service.http.get(tokens('leaving-bot')).set(owner.auth), 404, 'not_found');
  });

  it('refuses a plain member (403) and an outsider (404); the agent stays', async () => {
    const agent = await installAgent(service, owner, podId, 'staying-bot');
    expectProblem(await service.http.delete(`${agents()}/staying-bot`).set(member.auth), 403, 'not_pod_admin');
    expectProblem(await service.http.delete(`${agents()}/staying-bot`).set(outsider.auth), 404, 'not_found');
    expect(await probeNonHuman(service, agent.token)).toEqual(AUTHENTICATED_NON_HUMAN);
  });
});

describe('runtime tokens', () => {
  const name = 'token-bot';

  beforeAll(async () => {
    await service.http.post(agents()).set(owner.auth).send({ name }).expect(201);
  });

  it('creates a token and shows its secret this once (no-store)', async () => {
    const res = await service.http.post(tokens(name)).set(admin.auth).send({ name: 'laptop' });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      id: expect.stringMatching(/^rtk_/),
      name: 'laptop',
      token: expect.stringMatching(/^art_[0-9A-Za-z]{46}$/),
      createdAt: expect.any(String),
      expiresAt: null,
    });
    expect(await probeNonHuman(service, res.body.token)).toEqual(AUTHENTICATED_NON_HUMAN);
  });

  it('lists tokens to members without any secret or hash, newest first', async () => {
    const first = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'first' }).expect(201);
    const second = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'second' }).expect(201);
    const res = await service.http.get(tokens(name)).set(member.auth);
    expect(res.status).toBe(200);
    const ids = res.body.items.map((t: { id: string }) => t.id);
    expect(ids.indexOf(second.body.id)).toBeLessThan(ids.indexOf(first.body.id));
    for (const item of res.body.items) expect(Object.keys(item).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name']);
    for (const secret of [first.body.token, second.body.token]) {
      expect(res.text).not.toContain(secret);
      expect(res.text).not.toContain(hashToken(secret));
    }
    expect(res.text).not.toMatch(/art_|token_?hash|"token"/i);
  });

  it('records lastUsedAt when a token is used', async () => {
    const created = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'used' }).expect(201);
    await probeNonHuman(service, created.body.token);
    // The write is fire-and-forget after authentication; give it a moment.
    let used: { lastUsedAt: string | null } | undefined;
    for (let attempt = 0; attempt < 20 && !used?.lastUsedAt; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      const list = await service.http.get(tokens(name)).set(owner.auth).expect(200);
      used = list.body.items.find((t: { id: string }) => t.id === created.body.id);
    }
    expect(used?.lastUsedAt).toEqual(expect.any(String));
  });

  it('deletes a token (204), then 404 for the same id', async () => {
    const created = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'short-lived' }).expect(201);
    expect((await service.http.delete(`${tokens(name)}/${created.body.id}`).set(admin.auth)).status).toBe(204);
    expectProblem(await service.http.delete(`${tokens(name)}/${created.body.id}`).set(admin.auth), 404, 'not_found');
    expect(await probeNonHuman(service, created.body.token)).toEqual(UNAUTHENTICATED);
    const list = await service.http.get(tokens(name)).set(owner.auth).expect(200);
    expect(list.body.items.map((t: { id: string }) => t.id)).not.toContain(created.body.id);
  });

  it("does not delete another agent's token through this agent's path (404)", async () => {
    const other = await installAgent(service, owner, podId, 'other-token-bot');
    expectProblem(await service.http.delete(`${tokens(name)}/${other.tokenId}`).set(owner.auth), 404, 'not_found');
    expect(await probeNonHuman(service, other.token)).toEqual(AUTHENTICATED_NON_HUMAN);
  });

  it('refuses a plain member creating or deleting (403) and an outsider listing (404)', async () => {
    const created = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'kept' }).expect(201);
    expectProblem(await service.http.post(tokens(name)).set(member.auth).send({ name: 'mine' }), 403, 'not_pod_admin');
    expectProblem(await service.http.delete(`${tokens(name)}/${created.body.id}`).set(member.auth), 403, 'not_pod_admin');
    expectProblem(await service.http.get(tokens(name)).set(outsider.auth), 404, 'not_found');
    expectProblem(await service.http.get(tokens('no-such-bot')).set(owner.auth), 404, 'not_found');
  });

  it('refuses an expiresAt in the past (400) and unknown fields (400)', async () => {
    const past = new Date(Date.now() - 60_000).toISOString();
    const res = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'old', expiresAt: past });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([{ path: 'body.expiresAt', message: expect.any(String) }]);
    expectProblem(await service.http.post(tokens(name)).set(owner.auth).send({ name: 'x', token: 'art_mine' }), 400, 'invalid_request');
  });

  it('refuses a token once its expiresAt has passed (401)', async () => {
    const expiresAt = new Date(clock.now() + 1500).toISOString();
    const created = await service.http.post(tokens(name)).set(owner.auth).send({ name: 'brief', expiresAt }).expect(201);
    expect(created.body.expiresAt).toBe(expiresAt);
    expect(await probeNonHuman(service, created.body.token)).toEqual(AUTHENTICATED_NON_HUMAN);
    clock.advance(Date.parse(expiresAt) - clock.now() + 100);
    expect(await probeNonHuman(service, created.body.token)).toEqual(UNAUTHENTICATED);
  });
});
