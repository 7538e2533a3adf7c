// The non-2xx answers of the benchmarks' loads, by status and problem code (bench.mjs, bench-rate.mjs, bench-report.mjs).

/**
 * The non-2xx answers of a run by status and problem `code` (the body's), e.g.
 * `{ '503 dependency_unavailable': 12 }`: a count of non-2xx alone does not say whether the
 * service refused on purpose (fail-closed under overload) or failed. `count` is autocannon's
 * `onResponse` (every answer's status and body); a body that is not a problem document counts
 * under its first bytes.
 */
export function refusalTally() {
  const counts = {};
  return {
    counts,
    count(status, body) {
      if (status >= 200 && status < 300) return;
      let code;
      try {
        code = JSON.parse(body)?.code;
      } catch {
        // not JSON: named by what it starts with below
      }
      const key = `${status} ${code ?? `(no code: ${JSON.stringify(String(body).slice(0, 40))})`}`;
      counts[key] = (counts[key] ?? 0) + 1;
    },
  };
}

/** Several runs' refusals summed. */
export const mergeRefusals = (all) =>
  all.reduce((sum, counts) => {
    for (const [key, n] of Object.entries(counts ?? {})) sum[key] = (sum[key] ?? 0) + n;
    return sum;
  }, {});

/** `503 dependency_unavailable ×12, 500 internal_error ×1`, most frequent first; `none` when every answer was 2xx. */
export const refusalsText = (counts) =>
  Object.entries(counts ?? {})
    .sort(([, a], [, b]) => b - a)
    .map(([key, n]) => `${key} ×${n}`)
    .join(', ') || 'none';
