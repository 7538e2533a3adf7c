import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { evaluateTextPlainly, type EvaluateText, type ResultSet } from '../policy/evaluate-text';

/**
 * One evaluation through the module's own ABI (OPA's `opa_eval`, ABI 1.2), as opa-wasm's
 * `evaluate` does it, without the copies around it: the input's text is encoded straight into
 * the module's memory (opa-wasm takes a buffer of its own and copies it in), and the result's end
 * is found with `indexOf` and decoded by one kept TextDecoder (opa-wasm scans for it a byte at a
 * time and makes a decoder per call): nearly a fifth of the time of an evaluation of broker/check.
 *
 * What it reads of opa-wasm's LoadedPolicy (`wasmInstance`, `mem`, `dataAddr`, `dataHeapPtr`,
 * `minorVersion`, `entrypoints`) is not its documented API: a module or a library version that
 * does not have them all, or an ABI before 1.2, is evaluated by the library itself.
 */
export const evaluateTextThroughAbi: EvaluateText = (policy, text, entrypoint) => {
  const abi = abiOf(policy);
  const id = abi?.entrypoints[entrypoint];
  if (!abi || id === undefined) return evaluateTextPlainly(policy, text, entrypoint);
  const at = abi.dataHeapPtr;
  // UTF-8 takes at most three bytes per UTF-16 code unit: room for the worst case first.
  const short = at + text.length * 3 - abi.mem.buffer.byteLength;
  if (short > 0) abi.mem.grow(Math.ceil(short / WASM_PAGE));
  const { read, written } = encoder.encodeInto(text, new Uint8Array(abi.mem.buffer, at));
  if (read !== text.length) throw new Error('the input did not fit in the policy module memory');
  const resultAt = abi.wasmInstance.exports.opa_eval(0, id, abi.dataAddr, at, written, at + written, 0);
  const memory = new Uint8Array(abi.mem.buffer);
  const end = memory.indexOf(0, resultAt);
  if (end < 0) throw new Error('the policy module result is not terminated');
  return JSON.parse(decoder.decode(memory.subarray(resultAt, end))) as ResultSet;
};

const WASM_PAGE = 65_536;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Abi {
  wasmInstance: { exports: { opa_eval: (...args: number[]) => number } };
  mem: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  dataAddr: number;
  dataHeapPtr: number;
  entrypoints: Record<string, number>;
}

function abiOf(policy: LoadedPolicy): Abi | undefined {
  const candidate = policy as unknown as Partial<Abi> & { minorVersion?: number };
  if (typeof candidate.minorVersion !== 'number' || candidate.minorVersion < 2) return undefined;
  if (typeof candidate.dataAddr !== 'number' || typeof candidate.dataHeapPtr !== 'number') return undefined;
  if (typeof candidate.mem?.grow !== 'function' || typeof candidate.entrypoints !== 'object') return undefined;
  if (typeof candidate.wasmInstance?.exports?.opa_eval !== 'function') return undefined;
  return candidate as Abi;
}
