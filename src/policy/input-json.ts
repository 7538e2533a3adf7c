/**
 * The JSON text of a decision input, written once per decision: the policy module reads it as it
 * is (opa-wasm takes the bytes of a well-formed JSON text) and the decision log writes the masked
 * text, so an input is never serialized twice. Serializing was a tenth of a broker check's CPU:
 * once inside opa-wasm, once more for the decision event.
 */
export interface InputJson {
  /** UTF-8 of the whole input, for the policy module. */
  readonly bytes: ArrayBuffer;
  /** The input with each masked member replaced by the mask, for the decision log. */
  readonly logged: string;
  /** JSON pointers of what `logged` replaced (`/input/args`), as OPA's events name them. */
  readonly masked: readonly string[];
}

/**
 * Values whose JSON is kept: frozen objects that many inputs hold as they are (a grant chain's
 * facts, say, the same for every check until the tree changes).
 */
const serialized = new WeakMap<object, string>();

/**
 * Freezes `value` (deeply: a change after this point would make its kept JSON lie to the policy)
 * and keeps its JSON, which every input holding it at its top level reuses.
 */
export function serializedOnce<T extends object>(value: T): T {
  serialized.set(deepFreeze(value), JSON.stringify(value));
  return value;
}

const encoder = new TextEncoder();

/**
 * The JSON of `input` (a plain object), as JSON.stringify would write it, its top-level members in
 * order, reusing kept JSON; the logged text replaces each member named in `maskedKeys` by `mask`.
 */
export function writeInputJson(input: object, maskedKeys: readonly string[], mask: string): InputJson {
  let shared = '';
  let shown = '';
  let hidden = '';
  const masked: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    const member = `,${JSON.stringify(key)}:`;
    // As JSON.stringify: a member whose value has no JSON (undefined) is left out.
    const text: string | undefined = (typeof value === 'object' && value !== null && serialized.get(value)) || JSON.stringify(value);
    if (text === undefined) continue;
    if (maskedKeys.includes(key)) {
      shown += member + text;
      hidden += member + JSON.stringify(mask);
      masked.push(`/input/${key}`);
    } else {
      shared += member + text;
    }
  }
  return {
    bytes: encoder.encode(`{${(shared + shown).slice(1)}}`).buffer as ArrayBuffer,
    logged: `{${(shared + hidden).slice(1)}}`,
    masked,
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
}
