/**
 * Speed-up: the JSON of values that never change, kept and reused by every decision input that
 * holds them.
 *
 * Trades: memory (one string per frozen value still reachable, held weakly: it goes with the value)
 * and a member order that differs from JSON.stringify's (kept members come after the rest, which
 * neither JSON nor the policy gives a meaning to) for serializing a broker check's largest members
 * (the chain, the connection, the pod members: the same for every check of a tree until it changes)
 * once instead of at every check.
 *
 * Off (SPEEDUPS=off): policy/input-json.ts's NO_JSON_MEMO, which keeps nothing.
 */
import type { JsonMemo } from '../policy/input-json';

/**
 * A memo of its own (one per policy engine): keeps the JSON of a value once it is frozen all the
 * way down (policy/input-json.ts's serializedOnce freezes so), as then its text cannot go stale.
 */
export function createJsonMemo(): JsonMemo {
  const texts = new WeakMap<object, string>();
  return {
    kept(value) {
      let text = texts.get(value);
      if (text === undefined && deeplyFrozen(value)) {
        text = JSON.stringify(value);
        texts.set(value, text);
      }
      return text;
    },
  };
}

function deeplyFrozen(value: object): boolean {
  if (!Object.isFrozen(value)) return false;
  for (const inner of Object.values(value) as unknown[]) {
    if (typeof inner === 'object' && inner !== null && !deeplyFrozen(inner)) return false;
  }
  return true;
}
