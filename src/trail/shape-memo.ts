/**
 * Shape codes of the call trail kept from earlier writes (repositories/shapes.ts), by the shape's
 * key: a code once committed is never deleted or reused, so a kept one stays right. The plain
 * trail keeps none; src/speedups/memo.ts keeps the ones this process has seen.
 */
export interface ShapeMemo {
  get(key: string): number | undefined;
  /** Codes made or found by a statement that has committed. */
  keep(made: ReadonlyMap<string, number>): void;
}
