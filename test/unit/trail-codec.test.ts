import { idBytes, idTimeMs, newId, newIdAt } from '../../src/kernel/ids';
import { decisionUuidOf, digestBytes, digestOfBytes, idOfUuid, uuidOf, usualReason } from '../../src/trail/repositories/codec';

/** The call trail's binary form: every conversion gives back exactly what went in, and refuses junk. */
describe('the call record codec', () => {
  it('mints call ids that carry their time and count up within one millisecond', () => {
    const at = Date.parse('2026-11-25T12:34:56.789Z');
    const ids = Array.from({ length: 500 }, () => newIdAt('call', at));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(idTimeMs(idBytes('call', id)!)).toBe(at);
    expect(idTimeMs(idBytes('call', newIdAt('call', at + 1))!)).toBe(at + 1);
  });

  it('keeps the order of one instant when other instants are minted in between (a test clock beside the wall clock)', () => {
    const frozen = Date.parse('2026-11-25T12:00:00.000Z');
    const ids = Array.from({ length: 200 }, (_, i) => {
      newIdAt('call', frozen + 1 + i); // another clock's reading between two of the frozen one's
      return newIdAt('call', frozen);
    });
    expect([...ids].sort()).toEqual(ids);
  });

  it('turns ids into UUIDs and back, and refuses what is not an id of the kind', () => {
    for (const kind of ['call', 'grant', 'approval'] as const) {
      const id = newId(kind);
      const uuid = uuidOf(kind, id);
      expect(uuid).toMatch(/^[0-9a-f]{32}$/);
      expect(idOfUuid(kind, `${uuid.slice(0, 8)}-${uuid.slice(8, 12)}-${uuid.slice(12, 16)}-${uuid.slice(16, 20)}-${uuid.slice(20)}`)).toBe(
        id,
      );
    }
    for (const junk of ['grt_..', 'call_01jd6x3c4vf8r9t2y5u7w0z1ab', 'grt_01jd6x3c4vf8r9t2y5u7w0z1a\u0000', '']) {
      expect(() => uuidOf('grant', junk)).toThrow('not a grant id');
    }
  });

  it('keeps an approval as its UUID and a policy decision as its own, each read back as it went in', () => {
    const approval = newId('approval');
    const decision = crypto.randomUUID();
    const dashed = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    expect(idOfUuid('approval', dashed(uuidOf('approval', approval)))).toBe(approval);
    expect(dashed(decisionUuidOf(decision))).toBe(decision);
    // An approval is never taken for a decision, nor a decision for an approval.
    expect(() => uuidOf('approval', decision)).toThrow('not a approval id');
    for (const junk of [approval, 'not-a-decision', `${decision}\u0000`, decision.toUpperCase().replace(/[0-9]/g, 'G')]) {
      expect(() => decisionUuidOf(junk)).toThrow('not a decision id');
    }
  });

  it('keeps a digest as its 32 bytes, and refuses anything else', () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    expect(digestBytes(digest)).toHaveLength(32);
    expect(digestOfBytes(digestBytes(digest))).toBe(digest);
    for (const junk of ['sha256:00', `sha256:${'AB'.repeat(32)}`, `md5:${'ab'.repeat(32)}`, `sha256:${'ab'.repeat(32)}\u0000`]) {
      expect(() => digestBytes(junk)).toThrow('not a sha256 digest');
    }
  });

  it('stores the usual reason of an outcome as null, a denial always', () => {
    expect(usualReason('pending')).toBe('allowed');
    expect(usualReason('succeeded')).toBe('allowed');
    expect(usualReason('awaiting_approval')).toBe('approval_required');
    expect(usualReason('denied')).toBeNull();
  });
});
