import fc from 'fast-check';
import type { Test } from 'supertest';
import { startService, type TestService } from '../support/service';
import {
  credential,
  hostileJson,
  hostileShapeText,
  hostileString,
  mutated,
  pathValue,
  percentEncode,
  type Credential,
} from '../support/fuzz-arbitraries';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';

/**
 * Every route of the OpenAPI document, fuzzed the way an attacker would (issue 8): wrong types for
 * every declared field, hostile strings, huge and deep shapes, prototype keys, wrong-prefix and
 * malformed ids, unknown and repeated query parameters, bodies where none belongs, every kind of
 * credential. Whatever comes in, the answer is below 500, and every error is a problem document.
 * FUZZ_RUNS (default 25 per route) and FUZZ_SEED make it wider or reproducible.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
fc.configureGlobal({ seed: Number(process.env.FUZZ_SEED ?? 20261122), numRuns: RUNS, endOnFailure: true });

type Parameter = { name: string; in: 'path' | 'query'; schema?: { type?: string } };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
  security?: unknown[];
};
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};

let service: TestService;
let doc: Doc;

beforeAll(async () => {
  service = await startService();
  doc = (await service.http.get('/api/openapi.json').expect(200)).body;
});
afterAll(() => service.close());

/** A world of every kind of id a path can hold, with a credential of every kind. */
async function world() {
  const w = await brokerWorld(service);
  const other = await brokerWorld(service);
  const { rootId, leafId } = await chainOf(service, w, 1);
  const foreign = await chainOf(service, other, 0);
  const call = await checkAs(service, w, leafId, w.agent);
  await service.http.post(`/api/registry/pods/${w.podId}/agents/${w.agent.name}/runtime-stop`).set(w.owner.auth);
  const events = await service.http.get('/api/agents/runtime/events').set(w.agent.auth);
  const ids: Record<string, string[]> = {
    podId: [w.podId, other.podId],
    grantId: [rootId, leafId, foreign.rootId],
    connectionId: [w.connectionId, other.connectionId],
    callId: [call.body.callId],
    eventId: [events.body.items[0]?.id ?? 'evt_01jd6x3c4vf8r9t2y5u7w0z1ab'],
    name: [w.agent.name, 'no-such-agent'],
    tokenId: [w.agent.tokenId],
    userId: [w.member.userId, w.owner.userId],
  };
  // A valid body per route, for the mutations that get past validation into the handlers.
  const examples: Record<string, Record<string, unknown>> = {
    'POST /api/grants': { connectionId: w.connectionId, target: { kind: 'pod', id: w.podId }, tools: ['repos.read_file'] },
    'POST /api/grants/{grantId}/attenuate': { tools: ['repos.read_file'], budget: { calls: 5 } },
    'POST /api/broker/check': { grantId: leafId, tool: 'repos.read_file', subjectToken: w.agent.token, args: { path: 'README.md' } },
    'POST /api/broker/calls/{callId}/outcome': { outcome: 'succeeded', durationMs: 5 },
    'POST /api/broker/outcomes': { outcomes: [{ callId: call.body.callId, outcome: 'succeeded', durationMs: 5 }] },
    'POST /api/registry/pods/{podId}/agents': { name: 'fuzz-bot', displayName: 'Fuzz' },
    'PATCH /api/registry/pods/{podId}/agents/{name}': { displayName: 'Renamed', description: 'x' },
    'POST /api/registry/pods/{podId}/agents/{name}/runtime-tokens': { name: 'fuzz' },
    'POST /api/pods': { name: 'Fuzz pod' },
    'POST /api/pods/{podId}/members': { userId: 'fuzz-user', role: 'member' },
    'POST /api/connections': {
      kind: 'code_hosting_app',
      brokerId: w.broker.id,
      externalInstallationId: 'x',
      tools: [{ name: 'a.b', access: 'read' }],
    },
    'PATCH /api/connections/{connectionId}': { status: 'connected' },
  };
  return { ids, examples, tokens: { human: w.owner.token, agent: w.agent.token, broker: w.broker.token } };
}

const SECURITY_KINDS: Record<string, string> = { humanJwt: 'human', agentRuntimeToken: 'agent', brokerToken: 'broker' };
const acceptedKinds = (operation: Operation) =>
  (operation.security ?? []).flatMap((requirement) => Object.keys(requirement as object).map((name) => SECURITY_KINDS[name]!));

/** The declared body fields of an operation, each given a value of any type. */
function fieldsBody(doc: Doc, operation: Operation): fc.Arbitrary<unknown> | undefined {
  const ref = operation.requestBody?.content['application/json']?.schema.$ref;
  const properties = ref ? Object.keys(doc.components.schemas[ref.split('/').pop()!]?.properties ?? {}) : [];
  if (properties.length === 0) return undefined;
  return fc.record(Object.fromEntries(properties.map((name) => [name, hostileJson])), { requiredKeys: [] });
}

type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; text: string; type: string };

function bodies(doc: Doc, operation: Operation, example: Record<string, unknown> | undefined): fc.Arbitrary<Body> {
  const json = (value: fc.Arbitrary<unknown>) => value.map((v): Body => ({ kind: 'json', value: v }));
  const fields = fieldsBody(doc, operation);
  const near = example
    ? [
        { weight: 2, arbitrary: json(fc.constant(example)) },
        { weight: 6, arbitrary: json(mutated(example)) },
      ]
    : [];
  return fc.oneof(
    { weight: example ? 1 : 6, arbitrary: fc.constant<Body>({ kind: 'none' }) },
    ...near,
    json(hostileJson),
    ...(fields ? [json(fields)] : []),
    hostileShapeText.map((text): Body => ({ kind: 'raw', text, type: 'application/json' })),
    fc.constantFrom<Body>({ kind: 'raw', text: 'name=x', type: 'text/plain' }, { kind: 'raw', text: '{"a":', type: 'application/json' }),
  );
}

function query(operation: Operation): fc.Arbitrary<string> {
  const known = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
  const key = fc.oneof(
    fc.constantFrom(...known, 'unknown', '__proto__', 'limit'),
    hostileString.filter((s) => s.length < 20),
  );
  const value = fc.oneof(
    hostileString.filter((s) => s.length < 200),
    fc.constantFrom('0', '-1', '201', '1e3', 'NaN', '50', 'active'),
  );
  const junk = fc
    .array(fc.tuple(key, value), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&'));
  return fc.oneof({ weight: 3, arbitrary: fc.constant('') }, junk);
}

async function send(method: string, url: string, cred: Credential, body: Body) {
  let req = (service.http as unknown as Record<string, (u: string) => Test>)[method]!(url);
  if (cred.header) req = req.set('Authorization', cred.header);
  // As text: supertest would not send a bare number or string as JSON.
  if (body.kind === 'json') req = req.set('Content-Type', 'application/json').send(JSON.stringify(body.value) ?? 'null');
  if (body.kind === 'raw') req = req.set('Content-Type', body.type).send(body.text);
  return req;
}

/**
 * FUZZ_STATS=1 prints what the answers were, route by route: proof the fuzz gets past the gates.
 * FUZZ_SURVEY=1 counts failures instead of stopping at the first (to compare two versions).
 */
const SURVEY = Boolean(process.env.FUZZ_SURVEY);
const stats = new Map<string, Map<string, number>>();
let sent = 0;
let failed = 0;
function tally(route: string, status: number, code: unknown): void {
  sent += 1;
  if (!process.env.FUZZ_STATS && !SURVEY) return;
  const key = `${status}${typeof code === 'string' ? ` ${code}` : ''}`;
  const counts = stats.get(route) ?? new Map<string, number>();
  stats.set(route, counts.set(key, (counts.get(key) ?? 0) + 1));
}
afterAll(() => {
  for (const [route, counts] of stats) console.log(`${route}: ${[...counts].map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  if (SURVEY) console.log(`fuzz survey: ${failed} of ${sent} requests failed (status >= 500 or not a problem document)`);
});

function fail(message: string): void {
  failed += 1;
  if (!SURVEY) throw new Error(message);
}

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  );

describe('fuzzing every route of the OpenAPI document', () => {
  it('covers every operation the document lists', () => {
    expect(operations().length).toBeGreaterThan(30);
  });

  it('answers every hostile request below 500, every error as a problem document', async () => {
    for (const { path, method, operation } of operations()) {
      const w = await world();
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const params = fc.tuple(...names.map((name) => pathValue(w.ids[name] ?? ['x'])));
      const example = w.examples[`${method.toUpperCase()} ${path}`];
      const cred = credential(w.tokens, acceptedKinds(operation));
      await fc.assert(
        fc.asyncProperty(params, query(operation), cred, bodies(doc, operation, example), async (values, qs, cred, body) => {
          let url = path;
          names.forEach((name, i) => (url = url.replace(`{${name}}`, values[i]!)));
          if (qs) url += `?${qs}`;
          const res = await send(method, url, cred, body);
          tally(`${method.toUpperCase()} ${path}`, res.status, res.body?.code);
          const shown = `${method.toUpperCase()} ${url.slice(0, 200)} as ${cred.label} with ${JSON.stringify(body).slice(0, 300)}`;
          if (res.status >= 500) return fail(`${res.status} ${JSON.stringify(res.body).slice(0, 300)} for ${shown}`);
          if (res.status >= 400 && !/^application\/problem\+json/.test(res.headers['content-type'] ?? '')) {
            return fail(`${res.status} is not a problem document for ${shown}`);
          }
          if (res.status >= 400 && typeof res.body.code !== 'string') fail(`${res.status} problem without a code for ${shown}`);
        }),
      );
    }
  }, 600_000);
});
