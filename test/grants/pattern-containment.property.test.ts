import path from 'node:path';
import fc from 'fast-check';
import { decisions } from '../../src/kernel/decisions/catalogue';
import { createLogger } from '../../src/kernel/log';
import { PolicyEngine } from '../../src/policy/engine';

/**
 * Pattern containment (CONTRACT §8), decided by the real policy module (grants/attenuate, whose
 * lib.resources.covers is the rule), against an independent model of what a pattern matches:
 * `*` is `[^/]*`, a whole-segment `**` is `.*` (glob.match with `/` as delimiter), and a last
 * segment `**` also matches the folder before it (`docs/**` holds `docs`).
 *
 * 0. Matching: the broker check allows a path exactly when the model says its pattern matches it
 *    (the policy decides common shapes with string builtins, the rest with glob.match).
 * 1. Sound: when the policy lets a child path pattern under a parent, every value the child
 *    matches (sampled by expanding its wildcards at random) is matched by the parent.
 * 2. Exact without `**`: when it refuses, the child matches a value the parent does not: its
 *    wildcards expanded to a character no pattern contains. With `**` the rule stays sound but
 *    may refuse a narrowing that is one, when the parent's segments after a `**` could absorb the
 *    end of the child's `**` (a child `a/**` under a parent `**` then `/*`): a refusal, never a widening.
 */
const engine = new PolicyEngine({
  path: path.resolve(__dirname, '../../build/policy/policy.wasm'),
  log: createLogger('silent'),
  decisionLog: 'off',
});
beforeAll(() => engine.reload());

const NOW = 1_800_000_000_000;

function grantFact(id: string, paths: string[]) {
  return {
    id,
    target: { kind: 'pod' as const, id: 'pod_1', pod_id: 'pod_1' },
    audience_mode: 'members' as const,
    audience: [],
    tools: ['repos.read_file'],
    write_mode: 'read' as const,
    budget: { calls: 10, window_ms: 60_000 },
    expires_at_ms: NOW + 60_000,
    revoked: false,
    resources: { paths },
  };
}

function policyLetsUnder(parent: string, child: string): boolean {
  const decision = engine.evaluate(decisions.grantsAttenuate, {
    now_ms: NOW,
    max_depth: 8,
    max_live_children: 10,
    live_children: 0,
    caller: { kind: 'agent', id: 'agt_1', pod_id: 'pod_1', desired_state: 'running' },
    grant: {
      chain: [grantFact('grt_parent', [parent])],
      members: ['agt_1'],
      connection: { id: 'con_1', owner_id: 'alice', kind: 'code_hosting_app', status: 'connected', tools: { 'repos.read_file': 'read' } },
    },
    child: grantFact('grt_child', [child]),
  });
  const widened = decision.widened ?? [];
  expect(widened.filter((field) => field !== 'resources')).toEqual([]);
  return !widened.includes('resources');
}

function modelMatches(pattern: string, value: string): boolean {
  const segments = pattern.split('/');
  const folder = segments.length > 1 && segments.at(-1) === '**';
  const source = (folder ? segments.slice(0, -1) : segments)
    .map((segment) => (segment === '**' ? '.*' : segment.split('*').map(escape).join('[^/]*')))
    .join('/');
  return new RegExp(`^${source}${folder ? '(/.*)?' : ''}$`, 's').test(value);
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// Small alphabets make containment cases (and near misses) frequent.
const segment = fc.oneof(
  { weight: 1, arbitrary: fc.constant('**') },
  { weight: 6, arbitrary: fc.stringMatching(/^[ab*]{1,4}$/).filter((s) => !s.includes('**')) },
);
const pattern = fc.array(segment, { minLength: 1, maxLength: 4 }).map((segments) => segments.join('/'));

/**
 * A value of the pattern: each `*` some of [ab], each `**` some [ab/] (possibly empty), and a last
 * segment `**` sometimes nothing at all, its `/` included (the folder itself).
 */
function expansion(pattern: string) {
  const holes = pattern.split('/').flatMap((s) => (s === '**' ? ['**'] : [...s].filter((c) => c === '*')));
  const folder = pattern.includes('/') && pattern.endsWith('/**');
  return fc
    .tuple(fc.boolean(), ...holes.map((hole) => (hole === '**' ? fc.stringMatching(/^[ab/]{0,5}$/) : fc.stringMatching(/^[ab]{0,3}$/))))
    .map(([theFolder, ...fills]) => {
      let i = 0;
      const value = pattern
        .split('/')
        .map((s) => (s === '**' ? fills[i++] : s.replace(/\*/g, () => fills[i++]!)))
        .join('/');
      return folder && theFolder ? value.slice(0, value.lastIndexOf('/')) : value;
    });
}

/**
 * Values of the child that no pattern spells out: each `*` filled with `Z`, each `**` with
 * nothing, one `Q` segment or more `Q` segments than the parent has (every combination).
 */
function witnesses(child: string, parent: string): string[] {
  const deep = Array.from({ length: parent.split('/').length + 1 }, () => 'Q').join('/');
  let values = [''];
  child.split('/').forEach((s, i) => {
    const fills = s === '**' ? ['', 'Q', deep] : [s.replace(/\*/g, 'Z')];
    values = values.flatMap((v) => fills.map((f) => (i === 0 ? f : `${v}/${f}`)));
  });
  return values;
}

const runs = Number(process.env.FUZZ_RUNS ?? 300);
/** Of the accepted pairs, at least this many must be other than a pattern under itself or under `**`. */
const MIN_DISTINCT = (n: number) => Math.ceil(n / 10);

/**
 * The cases a property really checked: fc.pre skips the others, so each property below counts
 * its own and asserts that every run was one (and that enough were not the trivial pair).
 */
it('a child accepted under its parent matches nothing its parent does not', () => {
  let checked = 0;
  let distinct = 0;
  fc.assert(
    fc.property(
      pattern,
      pattern.chain((child) => fc.tuple(fc.constant(child), fc.array(expansion(child), { minLength: 1, maxLength: 20 }))),
      (parent, [child, values]) => {
        fc.pre(policyLetsUnder(parent, child));
        checked += 1;
        if (parent !== child && parent !== '**') distinct += 1;
        for (const value of values) expect(modelMatches(parent, value)).toBe(true);
      },
    ),
    { numRuns: runs },
  );
  expect(checked).toBeGreaterThanOrEqual(runs);
  expect(distinct).toBeGreaterThanOrEqual(MIN_DISTINCT(runs));
});

it('a child refused under its parent matches a value its parent does not (patterns without **)', () => {
  const flat = pattern.filter((p) => !p.split('/').includes('**'));
  let checked = 0;
  fc.assert(
    fc.property(flat, flat, (parent, child) => {
      fc.pre(!policyLetsUnder(parent, child));
      checked += 1;
      expect(witnesses(child, parent).some((value) => !modelMatches(parent, value))).toBe(true);
    }),
    { numRuns: runs },
  );
  expect(checked).toBeGreaterThanOrEqual(runs);
});

it('a pattern is always under itself, and under **', () => {
  fc.assert(
    fc.property(pattern, (p) => {
      expect(policyLetsUnder(p, p)).toBe(true);
      expect(policyLetsUnder('**', p)).toBe(true);
    }),
    { numRuns: runs },
  );
});

/** The broker check's answer on a path value under one pattern: allowed, resource_not_allowed or resource_invalid. */
function policyReason(pattern: string, value: string): string {
  const link = { ...grantFact('grt_1', [pattern]), parent_id: null, root_id: 'grt_1', broker_id: 'brk_1', connection_id: 'con_1' };
  const decision = engine.evaluate(decisions.brokerCheck, {
    now_ms: NOW,
    local_time: { time_zone: 'UTC', weekday: 3, hour: 10, minute: 0 },
    broker_id: 'brk_1',
    tool: { name: 'repos.read_file', access: 'read', resource: { path: '/path' } },
    args: { path: value },
    args_digest: 'sha256:0',
    resource: { path: value },
    principal: { kind: 'agent', id: 'agt_1' },
    principal_source: 'subject_token',
    trust_asserted_principal: false,
    chain: [link],
    connection: { id: 'con_1', owner_id: 'alice', kind: 'code_hosting_app', status: 'connected', tools: { 'repos.read_file': 'read' } },
    members: { pod_1: ['agt_1'] },
    session: { labels: {}, calls: {} },
  });
  expect(['allowed', 'resource_not_allowed', 'resource_invalid']).toContain(decision.reason);
  return String(decision.reason);
}

/** CONTRACT §14 on these values (of `a`, `b` and `/`): no empty segment, so no leading, trailing or doubled `/`. */
const canonicalPath = (value: string) => value.split('/').every((segment) => segment !== '');

function modelReason(pattern: string, value: string): string {
  if (!canonicalPath(value)) return 'resource_invalid';
  return modelMatches(pattern, value) ? 'allowed' : 'resource_not_allowed';
}

it('the broker check matches a value exactly as the model does, and refuses a value that is not canonical', () => {
  const value = fc.stringMatching(/^[ab/]{0,8}$/);
  fc.assert(
    fc.property(pattern, fc.array(value, { minLength: 1, maxLength: 10 }), (p, values) => {
      for (const v of values) expect(policyReason(p, v)).toBe(modelReason(p, v));
    }),
    { numRuns: runs },
  );
  // The shapes with a string-builtin fast path, on values that probe their edges.
  for (const [p, v, expected] of [
    ['a/*', 'a/b', 'allowed'],
    ['a/*', 'a/', 'resource_invalid'],
    ['a/*', 'a/b/c', 'resource_not_allowed'],
    ['a/**', 'a/b/c', 'allowed'],
    ['a/**', 'a/', 'resource_invalid'],
    ['a/**', 'a', 'allowed'],
    ['a/**', 'ab', 'resource_not_allowed'],
    ['a/*/**', 'a/b', 'allowed'],
    ['a/*/**', 'a', 'resource_not_allowed'],
    ['ab', 'ab', 'allowed'],
    ['ab', 'abb', 'resource_not_allowed'],
  ] as const)
    expect(policyReason(p, v)).toBe(expected);
});
