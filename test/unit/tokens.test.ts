import { constantTimeEqual, hashToken, hasValidShape, mintToken } from '../../src/credentials/tokens';

describe('bearer tokens', () => {
  it('mints prefixed tokens with 240 random bits and a checksum', () => {
    const token = mintToken('art');
    expect(token).toMatch(/^art_[0-9A-Za-z]{46}$/);
    expect(hasValidShape(token, 'art')).toBe(true);
    expect(hasValidShape(token, 'bkt')).toBe(false);
    expect(new Set(Array.from({ length: 200 }, () => mintToken('bkt'))).size).toBe(200);
  });

  it('refuses a typo through the checksum, without any look-up', () => {
    const token = mintToken('bkt');
    const last = token.at(-8)!;
    const typo = `${token.slice(0, -8)}${last === 'a' ? 'b' : 'a'}${token.slice(-7)}`;
    expect(hasValidShape(typo, 'bkt')).toBe(false);
    expect(hasValidShape(`${token}x`, 'bkt')).toBe(false);
  });

  it('stores only a hash, and compares in constant time', () => {
    const token = mintToken('art');
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(token)).not.toContain(token.slice(4));
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
  });
});
