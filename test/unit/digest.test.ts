import { createHash } from 'node:crypto';
import { digestOf } from '../../src/kernel/digest';

describe('argument digests (RFC 8785 canonical JSON)', () => {
  it('does not depend on key order, at any depth', () => {
    expect(digestOf({ b: 1, a: { d: [1, 2], c: 'x' } })).toBe(digestOf({ a: { c: 'x', d: [1, 2] }, b: 1 }));
  });

  it('is sha256 of the canonical text', () => {
    const canonical = '{"a":1,"b":[true,null,"é"]}';
    expect(digestOf({ b: [true, null, 'é'], a: 1 })).toBe(`sha256:${createHash('sha256').update(canonical).digest('hex')}`);
  });

  it('tells apart what differs only in a value', () => {
    expect(digestOf({ path: 'README.md' })).not.toBe(digestOf({ path: 'readme.md' }));
  });
});
