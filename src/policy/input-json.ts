/**
 * The JSON text of a decision input, written once per decision: the policy module reads it as it
 * is (opa-wasm takes the bytes of a well-formed JSON text, ./evaluate-text.ts) and the decision
 * log writes the masked text, so an input is never serialized twice. Serializing was a tenth of a
 * broker check's CPU: once inside opa-wasm, once more for the decision event.
 */
export interface InputJson {
  /** The whole input, for the policy module. */
  readonly text: string;
  /** The input with each masked member replaced by the mask, for the decision log. */
  readonly logged: string;
  /** JSON pointers of what `logged` replaced (`/input/args`), as OPA's events name them. */
  readonly masked: readonly string[];
  /** `text` again, split: the members whose JSON the memo keeps, and the text of all the others. */
  readonly split: SplitInput;
}

/** An input's text as the members a memo keeps (each value frozen, with its kept JSON) and the rest's text. */
export interface SplitInput {
  readonly rest: string;
  readonly kept: readonly KeptMember[];
}

export interface KeptMember {
  readonly key: string;
  /** Frozen all the way down: the same object always has the same JSON. */
  readonly value: object;
  readonly json: string;
}

/**
 * The kept JSON of values that never change: `kept(value)` is the text of JSON.stringify(value) if
 * it keeps one, undefined if not. The plain one (NO_JSON_MEMO) keeps none; src/speedups/memo.ts
 * keeps the JSON of deeply frozen values (see serializedOnce).
 */
export interface JsonMemo {
  kept(value: object): string | undefined;
}

export const NO_JSON_MEMO: JsonMemo = { kept: () => undefined };

/**
 * Freezes `value` deeply: it can no longer change, so a memo may keep its JSON for every input that
 * holds it at its top level (a grant chain's facts, say, the same for every check until the tree
 * changes), and serialize it once.
 */
export function serializedOnce<T extends object>(value: T): T {
  return deepFreeze(value);
}

/**
 * The JSON of `input` (a plain object): the members whose JSON `memo` keeps come as kept, the rest
 * are serialized in one JSON.stringify; the logged text replaces each member named in `maskedKeys`
 * by `mask`. Member order differs from JSON.stringify's (kept and masked members come last), which
 * neither JSON nor the policy gives a meaning to.
 */
/** Strings of one member longer than `maxChars` are cut to them and `marker` in the logged text. */
export interface LoggedCut {
  key: string;
  maxChars: number;
  marker: string;
}

export function writeInputJson(
  input: object,
  maskedKeys: readonly string[],
  mask: string,
  memo: JsonMemo = NO_JSON_MEMO,
  cut?: LoggedCut,
): InputJson {
  // No prototype: a member named `__proto__` is then an own member like any other, not a setter.
  const plain: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  let kept = '';
  let shown = '';
  let hidden = '';
  const masked: string[] = [];
  const keptMembers: KeptMember[] = [];
  for (const key of Object.keys(input)) {
    const value = (input as Record<string, unknown>)[key];
    if (maskedKeys.includes(key)) {
      // As JSON.stringify: a member whose value has no JSON (undefined) is left out.
      const text = JSON.stringify(value) as string | undefined;
      if (text === undefined) continue;
      shown += `,${JSON.stringify(key)}:${text}`;
      hidden += `,${JSON.stringify(key)}:${JSON.stringify(mask)}`;
      masked.push(`/input/${key}`);
      continue;
    }
    const shortened = cut?.key === key ? cutStrings(value, cut) : undefined;
    if (shortened) {
      shown += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
      hidden += `,${JSON.stringify(key)}:${JSON.stringify(shortened.value)}`;
      masked.push(...shortened.pointers.map((pointer) => `/input/${key}${pointer}`));
      continue;
    }
    const json = typeof value === 'object' && value !== null ? memo.kept(value) : undefined;
    if (json !== undefined) {
      kept += `,${JSON.stringify(key)}:${json}`;
      keptMembers.push({ key, value: value as object, json });
    } else plain[key] = value;
  }
  const head = JSON.stringify(plain).slice(0, -1);
  return {
    text: closed(head, kept + shown),
    logged: closed(head, kept + hidden),
    masked,
    split: { rest: closed(head, shown), kept: keptMembers },
  };
}

/**
 * A copy of an object of strings with each one longer than `maxChars` cut (never between the two
 * halves of a surrogate pair) and marked, and the pointers of those cut; undefined when none is.
 */
function cutStrings(value: unknown, { maxChars, marker }: LoggedCut): { value: object; pointers: string[] } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const entries = Object.entries(value);
  if (!entries.some(([, item]) => typeof item === 'string' && item.length > maxChars)) return undefined;
  const pointers: string[] = [];
  const copy = Object.fromEntries(
    entries.map(([name, item]) => {
      if (typeof item !== 'string' || item.length <= maxChars) return [name, item];
      const last = item.charCodeAt(maxChars - 1);
      const end = last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars;
      pointers.push(`/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`);
      return [name, `${item.slice(0, end)}${marker}`];
    }),
  );
  return { value: copy, pointers };
}

/** `head` (an object's text without its closing brace) with more members, each led by a comma. */
function closed(head: string, members: string): string {
  return head.length > 1 ? `${head}${members}}` : `{${members.slice(1)}}`;
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
}
