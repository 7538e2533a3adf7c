import { findHostileInput, MAX_JSON_DEPTH } from '../../src/http/input-guard';

describe('the hostile-input guard', () => {
  it('passes ordinary JSON, unicode included', () => {
    expect(findHostileInput({ name: 'Zoë 😀', list: [1, 'two', { three: null }] }, 'body')).toBeNull();
  });

  it.each([
    ['a NUL in a value', { a: 'x\u0000' }, 'body.a', /NUL/],
    ['a NUL in a key', { 'a\u0000': 1 }, 'body', /key that contains a NUL/],
    ['a lone high surrogate', { a: ['ok', '\ud800'] }, 'body.a.1', /lone surrogate/],
    ['a lone low surrogate', { a: '\udfffx' }, 'body.a', /lone surrogate/],
    ['a __proto__ key', JSON.parse('{"x": {"__proto__": {"admin": true}}}'), 'body.x', /reserved key/],
  ])('names %s and where it is', (_label, value, path, message) => {
    expect(findHostileInput(value, 'body')).toEqual({ path, message: expect.stringMatching(message) });
  });

  it(`allows ${MAX_JSON_DEPTH} levels of nesting and refuses one more`, () => {
    const nest = (depth: number): unknown => (depth === 0 ? 'leaf' : [nest(depth - 1)]);
    expect(findHostileInput(nest(MAX_JSON_DEPTH), 'body')).toBeNull();
    expect(findHostileInput(nest(MAX_JSON_DEPTH + 1), 'body')?.message).toMatch(/nested deeper/);
  });

  it('walks 100 000 levels without recursion (no stack overflow)', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(findHostileInput(deep, 'body')?.message).toMatch(/nested deeper/);
  });
});
