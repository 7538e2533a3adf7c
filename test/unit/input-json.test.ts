import fc from 'fast-check';
import { serializedOnce, writeInputJson } from '../../src/policy/input-json';

const decoder = new TextDecoder();
const evaluated = (input: object) => decoder.decode(writeInputJson(input, ['args'], '**REDACTED**').bytes);

/** Any JSON value, with the strings a hostile caller sends: lone surrogates, NUL, quotes. */
const hostileString = fc.oneof(fc.string(), fc.constantFrom('\u0000', '\ud800', 'a\udfffb', '"\\', '\u2028'));
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('the JSON text of a decision input (written once for the policy and the log)', () => {
  it('is JSON of the same value as JSON.stringify writes, whatever the members hold, kept or not', () => {
    const member = fc.oneof(
      json,
      fc.constant(undefined),
      json.map((value) => (typeof value === 'object' && value ? serializedOnce(value) : value)),
    );
    fc.assert(
      fc.property(fc.dictionary(hostileString, member, { maxKeys: 8 }), (input) => {
        const text = evaluated(input);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(input)));
        expect(text.length).toBe(JSON.stringify(input).length);
      }),
    );
  });

  it('gives the policy the arguments and the log only their mask, naming what it masked', () => {
    const input = { tool: 'repos.write_file', args: { content: 'secret \u0000 text' }, now_ms: 1 };
    const written = writeInputJson(input, ['args'], '**REDACTED**');
    expect(JSON.parse(decoder.decode(written.bytes))).toEqual(input);
    expect(JSON.parse(written.logged)).toEqual({ tool: 'repos.write_file', args: '**REDACTED**', now_ms: 1 });
    expect(written.logged).not.toContain('secret');
    expect(written.masked).toEqual(['/input/args']);
    expect(writeInputJson({ tool: 'x' }, ['args'], '**REDACTED**').masked).toEqual([]);
  });

  it('keeps a member named __proto__ as a member (found by the property above)', () => {
    const input = JSON.parse('{"__proto__":{"allow":true},"tool":"x"}') as object;
    expect(evaluated(input)).toBe(JSON.stringify(input));
  });

  it('reuses the JSON of a value serialized once, which can no longer change under it', () => {
    const chain = serializedOnce([{ id: 'grt_1', budget: { calls: 5 }, tools: ['a'] }]);
    expect(evaluated({ chain, now_ms: 1 })).toBe(JSON.stringify({ now_ms: 1, chain }));
    expect(Object.isFrozen(chain[0]!.budget)).toBe(true);
    expect(() => {
      (chain[0]!.tools as string[]).push('b');
    }).toThrow(TypeError);
    expect(evaluated({ chain })).toBe(JSON.stringify({ chain: [{ id: 'grt_1', budget: { calls: 5 }, tools: ['a'] }] }));
    expect(evaluated({ args: {}, chain })).toBe(JSON.stringify({ chain, args: {} }));
  });
});
