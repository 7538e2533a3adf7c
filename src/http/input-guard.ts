import type { FieldError } from '../kernel/errors';

/**
 * Rules every request value obeys before any route schema sees it, so no route can forget them:
 *
 * - no string (value or object key) holds a NUL character: Postgres text refuses it, so one
 *   such value in a batched INSERT used to fail every other tenant's rows beside it;
 * - every string is well-formed UTF-16 (no lone surrogate): JSON encoders, the policy engine
 *   and canonical JSON all refuse or mangle one;
 * - every number fits a double (`1e999` parses as Infinity, which canonical JSON refuses);
 * - no object key is `__proto__`: it would set the prototype of a parsed copy instead of a field;
 * - JSON nests at most MAX_JSON_DEPTH levels: recursive code below (canonical JSON for digests,
 *   the policy input) stays far from the stack's limit.
 *
 * The walk is iterative, so a hostile body 30 000 levels deep is refused, not a stack overflow.
 */
export const MAX_JSON_DEPTH = 32;

function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character';
  if (!text.isWellFormed()) return 'contains a lone surrogate (not well-formed Unicode)';
  return null;
}

export function findHostileInput(value: unknown, root: string): FieldError | null {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: root, depth: 0 }];
  while (pending.length > 0) {
    const { value: current, path, depth } = pending.pop()!;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) return { path, message: problem };
      continue;
    }
    // JSON.parse reads `1e999` as Infinity, which no JSON encoder or digest can write back.
    if (typeof current === 'number' && !Number.isFinite(current)) return { path, message: 'is a number that does not fit a double' };
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= MAX_JSON_DEPTH) return { path, message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(current)) {
      current.forEach((item, index) => pending.push({ value: item, path: `${path}.${index}`, depth: depth + 1 }));
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      const problem = key === '__proto__' ? 'is a reserved key' : textProblem(key);
      // The key itself is unprintable here; its position is named by the parent path.
      if (problem) return { path, message: `has a key that ${problem}` };
      pending.push({ value: item, path: `${path}.${key}`, depth: depth + 1 });
    }
  }
  return null;
}
