import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { evaluateTextPlainly } from '../../src/policy/evaluate-text';
import { serializedOnce, writeInputJson } from '../../src/policy/input-json';
import { createJsonMemo } from '../../src/speedups/memo';
import { evaluateTextThroughAbi, keepingUpTo } from '../../src/speedups/opa-abi';

/**
 * The policy module evaluated through OPA's ABI (src/speedups/opa-abi.ts) answers what opa-wasm's
 * own `evaluate` answers, on the service's module (built by `npm run build:policy`): a broker
 * check allowed and denied, text that is not ASCII, an input larger than the module's memory.
 */
const MODULE = path.join(__dirname, '../../build/policy/policy.wasm');
let viaAbi: LoadedPolicy;
let viaLibrary: LoadedPolicy;

beforeAll(async () => {
  const wasm = readFileSync(MODULE);
  viaAbi = await loadPolicy(wasm);
  viaLibrary = await loadPolicy(wasm);
});

const grant = {
  id: 'grt_1',
  target: { kind: 'pod', id: 'pod_1', pod_id: 'pod_1' },
  audience_mode: 'members',
  audience: [],
  tools: ['repos.read_file'],
  write_mode: 'read',
  budget: { calls: 10, window_ms: 1000 },
  expires_at_ms: 4_102_444_800_000,
  parent_id: null,
  root_id: 'grt_1',
  broker_id: 'brk_1',
  connection_id: 'con_1',
  revoked: false,
};
const allowed = {
  now_ms: 1_790_000_000_000,
  local_time: { time_zone: 'UTC', weekday: 3, hour: 10, minute: 0 },
  broker_id: 'brk_1',
  tool: { name: 'repos.read_file', access: 'read', resource: { repository: '/repository', ref: '/ref', path: '/path' } },
  args: { repository: 'acme/api', ref: 'refs/heads/main', path: 'docs/README.md' },
  args_digest: 'sha256:00',
  resource: { repository: 'acme/api', ref: 'refs/heads/main', path: 'docs/README.md' },
  principal: { kind: 'agent', id: 'agt_1' },
  principal_source: 'subject_token',
  trust_asserted_principal: false,
  chain: [grant],
  connection: { id: 'con_1', owner_id: 'u1', kind: 'code_hosting_app', status: 'connected', tools: { 'repos.read_file': 'read' } },
  members: { pod_1: ['agt_1'] },
  runtime: { desired_state: 'running' },
  session: { labels: {}, calls: {} },
};

function both(input: object, entrypoint = 'broker/check/decision') {
  const text = JSON.stringify(input);
  return { abi: evaluateTextThroughAbi(viaAbi, text, entrypoint), library: evaluateTextPlainly(viaLibrary, text, entrypoint) };
}

describe('a policy module evaluated through its ABI', () => {
  it('allows what the library allows', () => {
    const { abi, library } = both(allowed);
    expect(abi).toEqual(library);
    expect(abi[0]?.result).toMatchObject({ allow: true });
  });

  it('denies what the library denies, for the same reasons', () => {
    const inputs = [
      { ...allowed, chain: [{ ...grant, revoked: true }] },
      { ...allowed, resource: { ...allowed.resource, path: 'docs/../etc\u0001' } },
      { ...allowed, principal: undefined },
      {},
    ];
    for (const input of inputs) {
      const { abi, library } = both(input);
      expect(abi).toEqual(library);
      expect(abi[0]?.result).toMatchObject({ allow: false });
    }
  });

  it('reads text that is not ASCII as the library does, and refuses a lone surrogate as it does', () => {
    const { abi, library } = both({ ...allowed, resource: { ...allowed.resource, path: 'docs/é€😀/x.md' } });
    expect(abi).toEqual(library);
    const lone = JSON.stringify({ ...allowed, resource: { ...allowed.resource, path: 'docs/\ud800.md' } });
    const refusal = (evaluate: () => unknown) => {
      try {
        evaluate();
      } catch (error) {
        return error;
      }
      return 'no refusal';
    };
    expect(refusal(() => evaluateTextThroughAbi(viaAbi, lone, 'broker/check/decision'))).toBe(
      refusal(() => evaluateTextPlainly(viaLibrary, lone, 'broker/check/decision')),
    );
    expect(both(allowed).abi).toEqual(both(allowed).library);
  });

  it('grows the module memory for an input larger than it, and evaluates the next one as before', () => {
    const pages = (viaAbi as unknown as { mem: { buffer: ArrayBuffer } }).mem.buffer.byteLength;
    const large = { ...allowed, args: { ...allowed.args, content: 'é'.repeat(pages) } };
    const { abi, library } = both(large);
    expect(abi).toEqual(library);
    expect(both(allowed).abi).toEqual(both(allowed).library);
  });

  it('leaves a module without the ABI it knows to the library', () => {
    const legacy = Object.assign(Object.create(viaLibrary) as LoadedPolicy, { minorVersion: 1 });
    const spy = jest.spyOn(legacy, 'evaluate');
    const text = JSON.stringify(allowed);
    expect(evaluateTextThroughAbi(legacy, text, 'broker/check/decision')).toEqual(
      evaluateTextPlainly(viaLibrary, text, 'broker/check/decision'),
    );
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it('evaluates an input in parts, its frozen members kept parsed, as the library evaluates the whole', () => {
    const memo = createJsonMemo();
    const facts = (revoked: boolean) => ({
      chain: serializedOnce([{ ...grant, revoked }]),
      connection: serializedOnce({ ...allowed.connection }),
      members: serializedOnce({ pod_1: ['agt_1'] }),
    });
    const live = facts(false);
    const gone = facts(true);
    const parts = (input: object) => writeInputJson(input, ['args'], '**', memo);
    // Each set of facts twice (parsed, then kept), alternating, with the library's own evaluate on
    // the same module in between (it starts above what is kept), and calls of their own.
    for (let round = 0; round < 3; round += 1) {
      for (const [chosen, allow] of [
        [live, true],
        [gone, false],
      ] as const) {
        const json = parts({ ...allowed, ...chosen, now_ms: allowed.now_ms + round });
        expect(json.split.kept.map((member) => member.key)).toEqual(['chain', 'connection', 'members']);
        const viaParts = evaluateTextThroughAbi(viaAbi, json.text, 'broker/check/decision', json.split);
        expect(viaParts).toEqual(evaluateTextPlainly(viaLibrary, json.text, 'broker/check/decision'));
        expect(viaParts[0]?.result).toMatchObject({ allow });
        expect(evaluateTextPlainly(viaAbi, json.text, 'broker/check/decision')).toEqual(viaParts);
        expect(both({ ...allowed, tool: { name: 'repos.delete' } }).abi).toEqual(
          both({ ...allowed, tool: { name: 'repos.delete' } }).library,
        );
      }
    }
  });

  it('empties its kept region when full, and parses again what it dropped', async () => {
    const policy = await loadPolicy(readFileSync(MODULE));
    const small = keepingUpTo(4096);
    const memo = createJsonMemo();
    for (let i = 0; i < 60; i += 1) {
      const revoked = i % 3 === 0;
      const input = {
        ...allowed,
        chain: serializedOnce([{ ...grant, id: `grt_${i}`, root_id: `grt_${i}`, revoked }]),
        connection: serializedOnce({ ...allowed.connection }),
        members: serializedOnce({ pod_1: ['agt_1'] }),
      };
      const json = writeInputJson(input, ['args'], '**', memo);
      const viaParts = small(policy, json.text, 'broker/check/decision', json.split);
      expect(viaParts).toEqual(evaluateTextPlainly(viaLibrary, json.text, 'broker/check/decision'));
      expect(viaParts[0]?.result).toMatchObject({ allow: !revoked });
    }
  });
});
