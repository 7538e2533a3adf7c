import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';

/** OPA's result set of one evaluation: one member per result, `result` the entrypoint's value. */
export type ResultSet = Array<{ result?: unknown }>;

/**
 * How a loaded module evaluates one entrypoint on the JSON text of its input (./input-json.ts).
 * The plain one hands opa-wasm the text's UTF-8 through its public `evaluate`; src/speedups/
 * opa-abi.ts writes the text straight into the module's memory and reads the result back there.
 */
export type EvaluateText = (policy: LoadedPolicy, text: string, entrypoint: string) => ResultSet;

const encoder = new TextEncoder();

export const evaluateTextPlainly: EvaluateText = (policy, text, entrypoint) =>
  policy.evaluate(encoder.encode(text).buffer as ArrayBuffer, entrypoint) as ResultSet;
