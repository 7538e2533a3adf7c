import { brokerWorld, chainOf, checkAs, type BrokerWorld } from '../support/broker-world';
import { decisionsWritten, startService, type TestService } from '../support/service';

/**
 * The speed-ups (src/speedups/) change how fast the service answers, never what it answers: the
 * same broker-check scenario on a service with them (the default) and on one with SPEEDUPS=off
 * gives the same answers and logs the same decisions.
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
  path: string;
  level: number;
  input: { chain?: Array<{ id: string }>; args?: unknown; tool?: unknown };
  result: unknown;
  masked?: string[];
}

/** The broker-check decisions the service logged for checks of this grant, less what differs per run. */
function decisionsOf(service: TestService, grantId: string) {
  return service.logs
    .map((line) => JSON.parse(line) as LoggedDecision)
    .filter((line) => line.msg === 'decision' && line.path === 'broker/check/decision')
    .filter((line) => line.input.chain?.some((grant) => grant.id === grantId))
    .map((line) => ({
      level: line.level,
      args: line.input.args,
      tool: line.input.tool,
      result: withChainIndex(line),
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
    expect(plain.deps.speedUps.enabled).toBe(false);
  });

  it('answers a broker-check scenario exactly as with the speed-ups, and logs the same decisions', async () => {
    const withSpeedUps = await scenario(fast);
    const without = await scenario(plain);
    expect(without.answers).toEqual(withSpeedUps.answers);
    await decisionsWritten();
    const logged = decisionsOf(fast, withSpeedUps.leafId);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.every((decision) => decision.args === '**REDACTED**')).toBe(true);
    expect(decisionsOf(plain, without.leafId)).toEqual(logged);
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
