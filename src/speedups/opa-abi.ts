import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { evaluateTextPlainly, type EvaluateText, type ResultSet } from '../policy/evaluate-text';
import type { SplitInput } from '../policy/input-json';

/**
 * One evaluation through the module's own ABI (OPA's `opa_eval`, ABI 1.2), as opa-wasm's
 * `evaluate` does it, without the copies around it: the input's text is encoded straight into
 * the module's memory (opa-wasm takes a buffer of its own and copies it in), and the result's end
 * is found with `indexOf` and decoded by one kept TextDecoder (opa-wasm scans for it a byte at a
 * time and makes a decoder per call): nearly a fifth of the time of an evaluation of broker/check.
 *
 * An input given in parts (policy/input-json.ts's `split`: the members whose JSON never changes,
 * a broker check's chain, connection and pod members, and the text of the rest) is evaluated with
 * those members parsed once into the module's memory and kept there, so each check parses only
 * its own few members and links the kept values into its input (OPA's opa_value_add_path).
 * Trades: a region of the module's memory above its data, up to KEPT_MAX_BYTES, emptied whole
 * when full (each value is then parsed again at its next use); opa-wasm's own `evaluate` starts
 * above it (the region moves the module's `dataHeapPtr`).
 *
 * What it reads of opa-wasm's LoadedPolicy (`wasmInstance`, `mem`, `dataAddr`, `dataHeapPtr`,
 * `minorVersion`, `entrypoints`) is not its documented API: a module or a library version that
 * does not have them all, or an ABI before 1.2, is evaluated by the library itself.
 */
const KEPT_MAX_BYTES = 32 * 1024 * 1024;

export const evaluateTextThroughAbi: EvaluateText = keepingUpTo(KEPT_MAX_BYTES);

/** The evaluator, its kept region emptied past `maxBytes` (a test makes it small). */
export function keepingUpTo(maxBytes: number): EvaluateText {
  const regions = new WeakMap<LoadedPolicy, Kept>();
  return (policy, text, entrypoint, split) => {
    const abi = abiOf(policy);
    const id = abi?.entrypoints[entrypoint];
    if (!abi || id === undefined) return evaluateTextPlainly(policy, text, entrypoint);
    if (split && split.kept.length > 0 && hasSlowAbi(abi)) return evaluateSplit(keptOf(regions, maxBytes, policy, abi), abi, id, split);
    const at = abi.dataHeapPtr;
    const written = writeText(abi, text, at);
    const resultAt = abi.wasmInstance.exports.opa_eval(0, id, abi.dataAddr, at, written, at + written, 0);
    return resultOf(abi, resultAt);
  };
}

/** The UTF-8 of `text` written at `at` (the memory grown first if it may not fit): its length. */
function writeText(abi: Abi, text: string, at: number): number {
  // UTF-8 takes at most three bytes per UTF-16 code unit: room for the worst case first.
  const short = at + text.length * 3 - abi.mem.buffer.byteLength;
  if (short > 0) abi.mem.grow(Math.ceil(short / WASM_PAGE));
  const { read, written } = encoder.encodeInto(text, new Uint8Array(abi.mem.buffer, at));
  if (read !== text.length) throw new Error('the input did not fit in the policy module memory');
  return written;
}

/** The JSON text the module wrote at `resultAt`, parsed. */
function resultOf(abi: Abi, resultAt: number): ResultSet {
  const memory = new Uint8Array(abi.mem.buffer);
  const end = memory.indexOf(0, resultAt);
  if (end < 0) throw new Error('the policy module result is not terminated');
  return JSON.parse(decoder.decode(memory.subarray(resultAt, end))) as ResultSet;
}

/** Of a module's memory, above its data: the values kept parsed, by the frozen object they are the JSON of. */
interface Kept {
  dataAddr: number;
  start: number;
  end: number;
  values: WeakMap<object, number>;
  paths: Map<string, number>;
}

/** The policy's kept region, emptied when full or when its data was set again since (which moves the heap). */
function keptOf(regions: WeakMap<LoadedPolicy, Kept>, maxBytes: number, policy: LoadedPolicy, abi: Abi): Kept {
  const region = regions.get(policy);
  if (region && region.dataAddr === abi.dataAddr && region.end === abi.dataHeapPtr) {
    if (region.end - region.start <= maxBytes) return region;
    abi.dataHeapPtr = region.start;
  }
  const fresh = { dataAddr: abi.dataAddr, start: abi.dataHeapPtr, end: abi.dataHeapPtr, values: new WeakMap(), paths: new Map() };
  regions.set(policy, fresh);
  return fresh;
}

/** A value parsed into the region, which then grows past it (and the module's heap starts after it). */
function keep(abi: Abi & SlowAbi, region: Kept, json: string): number {
  const written = writeText(abi, json, region.end);
  const { exports } = abi.wasmInstance;
  exports.opa_heap_ptr_set(region.end + written);
  const addr = exports.opa_value_parse(region.end, written);
  if (addr === 0) throw new Error('a kept member of the input is not JSON the policy module reads');
  region.end = exports.opa_heap_ptr_get();
  abi.dataHeapPtr = region.end;
  return addr;
}

function evaluateSplit(region: Kept, abi: Abi & SlowAbi, id: number, split: SplitInput): ResultSet {
  const links: Array<[number, number]> = [];
  for (const member of split.kept) {
    let path = region.paths.get(member.key);
    if (path === undefined) region.paths.set(member.key, (path = keep(abi, region, JSON.stringify([member.key]))));
    let value = region.values.get(member.value);
    if (value === undefined) region.values.set(member.value, (value = keep(abi, region, member.json)));
    links.push([path, value]);
  }
  const { exports } = abi.wasmInstance;
  const at = region.end;
  const written = writeText(abi, split.rest, at);
  exports.opa_heap_ptr_set(at + written);
  const input = exports.opa_value_parse(at, written);
  if (input === 0) throw new Error('the input is not JSON the policy module reads');
  for (const [path, value] of links) {
    if (exports.opa_value_add_path(input, path, value) !== 0) throw new Error('a kept member could not join the input');
  }
  const context = exports.opa_eval_ctx_new();
  exports.opa_eval_ctx_set_input(context, input);
  exports.opa_eval_ctx_set_data(context, abi.dataAddr);
  exports.opa_eval_ctx_set_entrypoint(context, id);
  exports.eval(context);
  return resultOf(abi, exports.opa_json_dump(exports.opa_eval_ctx_get_result(context)));
}

const WASM_PAGE = 65_536;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The exports of OPA's ABI an evaluation of an input in parts uses (opa-wasm's own slow path uses them too). */
interface SlowAbi {
  wasmInstance: {
    exports: Record<
      | 'opa_heap_ptr_set'
      | 'opa_heap_ptr_get'
      | 'opa_value_parse'
      | 'opa_value_add_path'
      | 'opa_eval_ctx_new'
      | 'opa_eval_ctx_set_input'
      | 'opa_eval_ctx_set_data'
      | 'opa_eval_ctx_set_entrypoint'
      | 'eval'
      | 'opa_eval_ctx_get_result'
      | 'opa_json_dump',
      (...args: number[]) => number
    >;
  };
}

const SLOW_EXPORTS = [
  'opa_heap_ptr_set',
  'opa_heap_ptr_get',
  'opa_value_parse',
  'opa_value_add_path',
  'opa_eval_ctx_new',
  'opa_eval_ctx_set_input',
  'opa_eval_ctx_set_data',
  'opa_eval_ctx_set_entrypoint',
  'eval',
  'opa_eval_ctx_get_result',
  'opa_json_dump',
] as const;

function hasSlowAbi(abi: Abi): abi is Abi & SlowAbi {
  const exports = abi.wasmInstance.exports as Record<string, unknown>;
  return SLOW_EXPORTS.every((name) => typeof exports[name] === 'function');
}

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
