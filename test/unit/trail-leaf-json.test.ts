import { canonicalize } from 'json-canonicalize';
import { outcomeLeaf, recordLeaf, type OutcomeLeaf, type RecordLeaf } from '../../src/trail/tree/leaves';

/**
 * A leaf's JSON is written member by member (leaves.ts) instead of by `canonicalize`: anyone who
 * rebuilds a leaf from a record uses RFC 8785, so the two must give the same bytes for every value
 * a record may hold, hostile ones first, and for values of the wrong type too (those go to
 * `canonicalize` itself).
 */
const HOSTILE: unknown[] = [
  '',
  'plain',
  '"quoted" \\ back\\slash /',
  'controls \u0000\u0001\u0008\t\n\u000b\f\r\u001f\u007f',
  'line separators \u2028\u2029',
  'accents é ü ñ, CJK 漢字, RTL \u202e עברית',
  'astral 😀 𝄞 \u{10ffff}',
  'lone high \ud800 end',
  'lone low \udc00 start',
  '\udbff',
  'reversed pair \udc00\ud800',
  'bom \ufeff nonchar \uffff',
  'combining e\u0301 vs é',
  '</script><!-- -->',
  'x'.repeat(10_000),
  null,
  // Of the wrong type: written by canonicalize, whatever it makes of them.
  0,
  -0,
  1e21,
  1.5e-7,
  0.1 + 0.2,
  Number.MAX_SAFE_INTEGER + 2,
  true,
  { nested: { b: [1, 'two', null], a: '\ud800' } },
  ['array', { z: 1, a: 2 }],
];

/** Strings of random UTF-16 code units: lone and paired surrogates, controls, anything. */
function randomString(seed: number): string {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) >>> 0);
  const units = Array.from({ length: next() % 24 }, () => {
    const pick = next() % 4;
    if (pick === 0) return next() % 0x80;
    if (pick === 1) return 0xd800 + (next() % 0x800);
    return next() % 0x10000;
  });
  return String.fromCharCode(...units);
}

const recordOf = (value: unknown, member: number): RecordLeaf => {
  const leaf: Record<string, unknown> = {
    callId: 'call_01jdz3',
    grantId: 'grant_01jdz3',
    rootId: 'grant_01jdz0',
    tool: 'repos.read_file',
    argsDigest: 'sha256:00ff',
    decision: 'allow',
    reason: 'allowed',
    approvalId: null,
    requestedAt: '2026-11-27T02:00:00.000Z',
    principal: { kind: 'agent', id: 'agent_01' },
  };
  const keys = [...Object.keys(leaf).filter((key) => key !== 'principal'), 'principal.kind', 'principal.id'];
  const key = keys[member % keys.length]!;
  if (key.startsWith('principal.')) leaf.principal = { ...(leaf.principal as object), [key.slice(10)]: value };
  else leaf[key] = value;
  return leaf as unknown as RecordLeaf;
};

/** What leaves.ts wrote before: canonicalize over exactly the leaf's members. */
const canonicalRecord = (leaf: RecordLeaf) => {
  const { callId, grantId, rootId, tool, argsDigest, decision, reason, approvalId, requestedAt, principal } = leaf;
  return canonicalize({
    callId,
    grantId,
    rootId,
    tool,
    argsDigest,
    decision,
    reason,
    approvalId,
    requestedAt,
    principal: { kind: principal.kind, id: principal.id },
  });
};

describe('a leaf written member by member is the bytes of canonicalize', () => {
  it('for a hostile value in every member of a record leaf', () => {
    for (const value of HOSTILE)
      for (let member = 0; member < 11; member += 1) {
        const leaf = recordOf(value, member);
        expect(recordLeaf(leaf).toString('utf8')).toBe(canonicalRecord(leaf));
        expect(recordLeaf(leaf).equals(Buffer.from(canonicalRecord(leaf), 'utf8'))).toBe(true);
      }
  });

  it('for random UTF-16 in every member of both leaves', () => {
    for (let seed = 1; seed <= 3_000; seed += 1) {
      const value = randomString(seed);
      const leaf = recordOf(value, seed);
      expect(recordLeaf(leaf).equals(Buffer.from(canonicalRecord(leaf), 'utf8'))).toBe(true);
      const outcome = { callId: value, outcome: 'succeeded', completedAt: randomString(seed + 7) } as OutcomeLeaf;
      expect(outcomeLeaf(outcome).equals(Buffer.from(canonicalize(outcome), 'utf8'))).toBe(true);
    }
  });

  it('for hostile values in an outcome leaf', () => {
    for (const value of HOSTILE) {
      const outcome = { callId: 'call_01', outcome: value, completedAt: value } as OutcomeLeaf;
      expect(outcomeLeaf(outcome).equals(Buffer.from(canonicalize(outcome), 'utf8'))).toBe(true);
    }
  });
});
