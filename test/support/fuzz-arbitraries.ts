import fc from 'fast-check';

/**
 * What an attacker sends: strings Postgres, JSON encoders or the policy engine choke on, values of
 * the wrong type, huge and deep shapes, keys that touch prototypes, ids of the wrong kind.
 */
export const hostileString = fc.oneof(
  fc.constantFrom(
    '',
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\u202e\u200b\ufeff',
    '😀'.repeat(50),
    '../../etc/passwd',
    "'; drop table grants; --",
    '%00',
    '{{7*7}}',
    '__proto__',
    'constructor',
    'grt_01jd6x3c4vf8r9t2y5u7w0z1ab',
    'pod_01jd6x3c4vf8r9t2y5u7w0z1ab',
    'art_' + 'A'.repeat(46),
    'bkt_' + 'A'.repeat(46),
  ),
  fc.constant('x'.repeat(10_000)),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 40 }),
);

/** Any JSON value, with hostile leaves. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype', '\u0000')), tie('value'), {
      maxKeys: 4,
    }),
  ),
})).value;

/** Shapes too big or too deep for any field: sent as raw JSON text (JSON.stringify would recurse). */
export const hostileShapeText = fc.oneof(
  fc.integer({ min: 33, max: 40 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  fc.constant(`${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}`),
  fc.constant(JSON.stringify(Array.from({ length: 10_000 }, (_, i) => i))),
  fc.constant(JSON.stringify(Array.from({ length: 10_000 }, () => 'x'))),
  fc.constant('{"__proto__": {"admin": true}}'),
  fc.constant('"\\ud800"'),
  fc.constant('{"a": "\\u0000"}'),
);

/**
 * Percent-encodes any string, lone surrogates included (as the WTF-8 bytes %ED%A0%80 and so on,
 * which a decoder must refuse): encodeURIComponent would throw on them instead of sending them.
 */
export function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else {
      out += encodeURIComponent(char);
    }
  }
  return out;
}

/** A value for a path parameter: a real id of the world, one of another kind, or junk. */
export function pathValue(realIds: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...realIds).map(percentEncode),
    fc.constantFrom('%00', '%ED%A0%80', '%FF', '..%2F..', 'a%2Fb', '%2e%2e', 'x'.repeat(600)),
    hostileString.filter((s) => s.length > 0 && s.length < 300).map(percentEncode),
  );
}

/** How the request authenticates: each kind the route takes, another kind, junk, or nothing. */
export type Credential = { label: string; header?: string };

/** Mostly a credential the route takes (so the request gets past the gate), sometimes not. */
export function credential(tokens: Record<string, string>, accepted: readonly string[]): fc.Arbitrary<Credential> {
  const all = Object.entries(tokens).map(([kind, token]) => ({ label: kind, header: `Bearer ${token}` }));
  const taken = all.filter((c) => accepted.includes(c.label));
  const usual = taken.length > 0 ? taken : all;
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...usual) },
    fc.constantFrom(...all),
    fc.constantFrom(...usual).map((c) => ({ label: `${c.label}, lower-case scheme`, header: c.header!.replace('Bearer', 'bearer') })),
    fc.constantFrom<Credential>(
      { label: 'none' },
      { label: 'garbage', header: 'Bearer not-a-token' },
      { label: 'basic', header: 'Basic dXNlcjpwYXNz' },
      { label: 'empty bearer', header: 'Bearer ' },
      { label: 'forged art_', header: `Bearer art_${'A'.repeat(46)}` },
      { label: 'forged bkt_', header: `Bearer bkt_${'A'.repeat(46)}` },
    ),
  );
}

/** A valid body with one thing wrong: a field replaced by any value, dropped, or one added. */
export function mutated(example: Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(example);
  const nested = keys.filter((k) => typeof example[k] === 'object' && example[k] !== null && !Array.isArray(example[k]));
  const replaceTop = fc.tuple(fc.constantFrom(...keys), hostileJson).map(([k, v]) => ({ ...example, [k]: v }));
  const drop = fc.constantFrom(...keys).map((k) => Object.fromEntries(Object.entries(example).filter(([key]) => key !== k)));
  const add = fc
    .tuple(
      fc.oneof(
        hostileString.filter((k) => k.length < 30),
        fc.constantFrom('installationId', 'brokerId', 'extra'),
      ),
      hostileJson,
    )
    .map(([k, v]) => JSON.parse(JSON.stringify({ ...example, [k]: v })));
  const replaceNested = nested.length
    ? [
        fc.tuple(fc.constantFrom(...nested), fc.string({ maxLength: 10 }), hostileJson).map(([k, inner, v]) => ({
          ...example,
          [k]: { ...(example[k] as object), [inner]: v },
        })),
      ]
    : [];
  return fc.oneof(replaceTop, replaceTop, drop, add, ...replaceNested);
}
