/**
 * Speed-up: what is built again and again from values that do not change, kept per instance.
 *
 *   - createJsonMemo: the JSON of values that never change, reused by every decision input that
 *     holds them. Trades memory (one string per frozen value still reachable, held weakly: it goes
 *     with the value) and a member order that differs from JSON.stringify's (kept members come
 *     after the rest, which neither JSON nor the policy gives a meaning to) for serializing a
 *     broker check's largest members once instead of at every check.
 *     Off: policy/input-json.ts's NO_JSON_MEMO, which keeps nothing.
 *   - createTreeInputMemo: a check's input members from the chain and the tree's facts (the
 *     chain, the connection, the pod members), built once per facts object and frozen, so the
 *     JSON memo keeps their text. Trades memory held weakly by the facts object (the tree cache
 *     drops it when the tree changes). Off: broker/policy-input.ts's PLAIN_TREE_INPUTS.
 *   - createShapeMemo: the codes of the call trail's (tool, principal) shapes this process has
 *     seen committed, so a record's INSERT is not preceded by the shape's. Trades at most 50 000
 *     entries (cleared whole when full); a code is never deleted or reused, so a kept one stays
 *     right. Off: every write makes or finds its shapes first (one statement more).
 */
import type { Chain } from '../broker/reads';
import { buildTreeFacts, type TreeFacts, type TreeInputs } from '../broker/policy-input';
import type { MutableFacts } from '../broker/tree-facts';
import { NO_PRINCIPAL_FACTS } from '../broker/tree-facts';
import type { CallPrincipal } from '../kernel/principals';
import { serializedOnce, type JsonMemo } from '../policy/input-json';
import type { ShapeMemo } from '../trail/shape-memo';

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

/** The input members of each tree's facts, built once per facts object (one memo per replica). */
export function createTreeInputMemo(): TreeInputs {
  const built = new WeakMap<MutableFacts, { chain: Chain; principal: CallPrincipal | null; value: TreeFacts }>();
  return {
    of(chain, facts, principal) {
      if (facts === NO_PRINCIPAL_FACTS) return buildTreeFacts(chain, facts, principal);
      const kept = built.get(facts);
      if (kept && kept.chain === chain && kept.principal?.kind === principal?.kind && kept.principal?.id === principal?.id)
        return kept.value;
      const value = buildTreeFacts(chain, facts, principal);
      serializedOnce(value.chain);
      serializedOnce(value.connection);
      serializedOnce(value.members);
      built.set(facts, { chain, principal, value });
      return value;
    },
  };
}

const SHAPES_KEPT = 50_000;

/** The shape codes this process has seen committed. */
export function createShapeMemo(): ShapeMemo {
  const codes = new Map<string, number>();
  return {
    get: (key) => codes.get(key),
    keep(made) {
      if (codes.size + made.size > SHAPES_KEPT) codes.clear();
      for (const [key, code] of made) codes.set(key, code);
    },
  };
}
