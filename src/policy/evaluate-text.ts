import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { SplitInput } from './input-json';

/** OPA's result set of one evaluation: one member per result, `result` the entrypoint's value. */
export type ResultSet = Array<{ result?: unknown }>;

/**
 * How a loaded module evaluates one entrypoint on the JSON text of its input (./input-json.ts).
 * The plain one hands opa-wasm the text's UTF-8 through its public `evaluate`; src/speedups/
 * opa-abi.ts writes the text straight into the module's memory and reads the result back there.
 * `split`, when given, is the same input in parts (./input-json.ts): an evaluator may keep the
 * parsed values of its kept members (the plain one reads `text` alone).
 */
export type EvaluateText = (policy: LoadedPolicy, text: string, entrypoint: string, split?: SplitInput) => ResultSet;

const encoder = new TextEncoder();

export const evaluateTextPlainly: EvaluateText = (policy, text, entrypoint) =>
  policy.evaluate(encoder.encode(text).buffer as ArrayBuffer, entrypoint) as ResultSet;
