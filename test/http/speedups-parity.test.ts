import { revokeBrokerTokens } from '../../src/admin/brokers';
import { treeSessionKeys, treeVersionKey, windowKey } from '../../src/budget/keys';
import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { callRecordsOf } from '../support/call-records';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';

/**
 * The speed-ups (src/speedups/) change how fast the service answers, never what it answers: the
 * same broker-check scenarios on a service with them (the default) and on one with SPEEDUPS=off,
 * which runs none of them (no cache, memo, group commit, single-flight or direct HTTP path), give
 * the same answers and log the same decisions behind them. A cached decision the budget script
 * then finds stale is decided again (and logged twice); only the decision an answer rests on (its
 * record's decisionId) is compared.
 */
let fast: TestService;
let plain: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  fast = await startService();
  plain = await startService({ SPEEDUPS: 'off' });
  world = await brokerWorld(fast);
});
afterAll(async () => {
  await fast?.close();
  await plain?.close();
});

type Answer = Awaited<ReturnType<typeof checkAs>>;

/** What must be equal between the two services (ids, times and request ids naturally differ). */
function essence(res: Answer) {
  const body = res.body as Record<string, unknown>;
  return {
    status: res.status,
    contentType: res.headers['content-type'],
    retryAfter: res.headers['retry-after'] === undefined ? 'none' : 'present',
    code: body.code,
    detail: body.detail,
    errors: body.errors,
    decision: body.decision,
    reason: body.reason,
    budget: body.budget && { remaining: (body.budget as { remaining: number }).remaining },
    keys: Object.keys(body).sort(),
  };
}

/** A fresh chain of a budget of 2, spent and refused in every way a check can be, then revoked. */
async function scenario(service: TestService) {
  const { rootId, leafId } = await chainOf(service, world, 1, { budget: { calls: 2, windowMs: 3_600_000 } });
  const agent = world.agent;
  const raw = (body: string, auth = world.broker.auth) =>
    service.http.post('/api/broker/check').set(auth).set('Content-Type', 'application/json').send(body);
  const answers: Answer[] = [
    await checkAs(service, world, leafId, agent),
    await checkAs(service, world, leafId, agent, { tool: 'pulls.merge' }),
    await checkAs(service, world, leafId, world.member),
    await checkAs(service, world, leafId, agent),
    await checkAs(service, world, leafId, agent),
    await checkAs(service, world, 'grt_01h455vb4pex5vsknk084sn02q', agent),
    await checkAs(service, world, leafId, agent, { colour: 'red' }),
    await checkAs(service, world, leafId, agent, { args: { x: 'y'.repeat(70_000) } }),
    await raw('{"grantId": '),
    await raw('{"__proto__": {"x": 1}}'),
    await raw(JSON.stringify({ grantId: leafId, tool: 'repos.read_file', subjectToken: agent.token, args: {} }), { Authorization: '' }),
  ];
  await service.http.post(`/api/grants/${rootId}/revoke`).set(world.owner.auth).expect(200);
  answers.push(await checkAs(service, world, leafId, agent));
  return { answers: answers.map(essence), leafId };
}

interface LoggedDecision {
  msg: string;
  decision_id: string;
  path: string;
  level: number;
  input: { chain?: Array<{ id: string }>; args?: unknown; tool?: unknown };
  result: unknown;
  masked?: string[];
}

/** The broker-check decisions behind the answers of checks of this grant, in order, less what differs per run. */
async function decisionsOf(service: TestService, grantId: string, people: Record<string, string> = {}) {
  const named = (value: unknown): unknown =>
    JSON.parse(Object.entries(people).reduce((text, [id, role]) => text.replaceAll(id, role), JSON.stringify(value)));
  const answered = new Set((await callRecordsOf(service.deps.db, grantId)).map((record) => record.decision_id));
  return service.logs
    .map((line) => JSON.parse(line) as LoggedDecision)
    .filter((line) => line.msg === 'decision' && line.path === 'broker/check/decision')
    .filter((line) => line.input.chain?.some((grant) => grant.id === grantId) && answered.has(line.decision_id))
    .map((line) => ({
      level: line.level,
      args: line.input.args,
      tool: line.input.tool,
      result: named(withChainIndex(line)),
      masked: line.masked,
    }));
}

/** The result with its explanation's grant named by its place in the chain: the ids differ per run. */
function withChainIndex(line: LoggedDecision): unknown {
  const result = line.result as { explanation?: { grantId: string } };
  if (!result.explanation) return result;
  const index = line.input.chain?.findIndex((grant) => grant.id === result.explanation!.grantId);
  return { ...result, explanation: { ...result.explanation, grantId: `chain[${index}]` } };
}

describe('with SPEEDUPS=off', () => {
  it('is the plain service: no speed-up is in use', () => {
    expect(fast.deps.speedUps.enabled).toBe(true);
    expect(fast.deps.speedUps.inUse).toEqual([
      'direct-http',
      'redis-cork',
      'log-lines',
      'memo',
      'opa-abi',
      'caches',
      'group-commit',
      'single-flight',
      'proof-blocks',
      'pending-calls',
    ]);
    expect(plain.deps.speedUps.enabled).toBe(false);
    expect(plain.deps.speedUps.inUse).toEqual([]);
  });

  it('answers a broker-check scenario exactly as with the speed-ups, and logs the same decisions', async () => {
    const withSpeedUps = await scenario(fast);
    const without = await scenario(plain);
    expect(without.answers).toEqual(withSpeedUps.answers);
    await decisionsWritten();
    const logged = await decisionsOf(fast, withSpeedUps.leafId);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.every((decision) => decision.args === '**REDACTED**')).toBe(true);
    expect(await decisionsOf(plain, without.leafId)).toEqual(logged);
    expect(withSpeedUps.answers.map((answer) => answer.reason ?? answer.code)).toEqual([
      'allowed',
      'tool_not_allowed',
      'allowed',
      'budget_exhausted',
      'budget_exhausted',
      'not_found',
      'invalid_request',
      'payload_too_large',
      'invalid_request',
      'invalid_request',
      'unauthenticated',
      'revoked',
    ]);
  });
});

/**
 * What each cache and memo keeps, changed under it: an approval asked for, approved, used once and
 * refused after; a member removed from the pod (their facts); a broker token revoked; the tree's
 * Redis keys lost (its windows rebuilt from the trail, by one rebuild or several).
 */
async function lifecycle(service: TestService) {
  const own = await brokerWorld(service);
  const write = { tool: 'issues.create_comment', args: { issue: 1, body: 'ok' } };
  const grant = await rootGrant(
    service,
    own.owner,
    own.connectionId,
    { kind: 'pod', id: own.podId },
    {
      tools: ['repos.read_file', 'issues.create_comment'],
      writeMode: 'approve',
      budget: { calls: 5, windowMs: 3_600_000 },
    },
  );
  const answers: Answer[] = [await checkAs(service, own, grant.id, own.agent), await checkAs(service, own, grant.id, own.member)];
  const asked = await checkAs(service, own, grant.id, own.agent, write);
  answers.push(asked);
  const approvalId = asked.body.approvalId as string;
  answers.push(await checkAs(service, own, grant.id, own.agent, { ...write, approvalId }));
  await service.http.post(`/api/approvals/${approvalId}/approve`).set(own.owner.auth).send({}).expect(200);
  answers.push(await checkAs(service, own, grant.id, own.agent, { ...write, approvalId }));
  answers.push(await checkAs(service, own, grant.id, own.agent, { ...write, approvalId }));

  await service.http.delete(`/api/pods/${own.podId}/members/${own.member.userId}`).set(own.owner.auth).expect(204);
  answers.push(await checkAs(service, own, grant.id, own.member));

  const redis = service.deps.redis;
  await redis.del(treeVersionKey(grant.id), windowKey(grant.id, grant.id), ...treeSessionKeys(grant.id));
  const together = await Promise.all([checkAs(service, own, grant.id, own.agent), checkAs(service, own, grant.id, own.agent)]);
  // Concurrent: which of the two takes the last unit but one is a race, the pair of answers is not.
  answers.push(...together.sort((x, y) => (y.body.budget?.remaining ?? 0) - (x.body.budget?.remaining ?? 0)));
  answers.push(await checkAs(service, own, grant.id, own.agent));

  // As `admin broker revoke` does: the tokens revoked, every tree of the broker stamped.
  await service.deps.invalidation.change(async (trx, touch) => {
    await touch('broker', own.broker.id);
    return revokeBrokerTokens(trx, own.broker.id);
  });
  answers.push(await checkAs(service, own, grant.id, own.agent));
  const people = { [own.member.userId]: 'member', [own.owner.userId]: 'owner', [own.agent.agentId]: 'agent' };
  return { answers: answers.map(essence), grantId: grant.id, people };
}

describe('with SPEEDUPS=off, what the caches keep changed under them', () => {
  it('answers exactly as with the speed-ups, and rests each answer on the same decision', async () => {
    const withSpeedUps = await lifecycle(fast);
    const without = await lifecycle(plain);
    expect(without.answers).toEqual(withSpeedUps.answers);
    expect(withSpeedUps.answers.map((answer) => answer.reason ?? answer.code)).toEqual([
      'allowed',
      'allowed',
      'approval_required',
      'approval_pending',
      'allowed',
      'approval_used',
      'principal_not_in_audience',
      'allowed',
      'allowed',
      'budget_exhausted',
      'unauthenticated',
    ]);
    await decisionsWritten();
    const logged = await decisionsOf(fast, withSpeedUps.grantId, withSpeedUps.people);
    // Every answer but the broker's 401 rests on a decision of its own.
    expect(logged).toHaveLength(withSpeedUps.answers.length - 1);
    expect(await decisionsOf(plain, without.grantId, without.people)).toEqual(logged);
  });
});
