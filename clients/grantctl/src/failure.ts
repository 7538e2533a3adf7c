import { ApiProblem } from '@grant-broker/client';
import { DEFAULT_BROKER_URL, redactUrl, scrubCredentials, UsageError } from './output';
import { Refusal } from './problems';

/** Exit codes scripts branch on: 0 done, 1 refused (4xx, bad usage), 2 service trouble (5xx, unreachable). */
export const EXIT = { ok: 0, refused: 1, unavailable: 2 } as const;

/**
 * A problem goes to stderr as the problem document (one JSON line); the exit code says which
 * kind. A refusal grantctl could place carries `fault` (the id, tool or field at fault) and `hint`
 * (what to do) beside the service's own members.
 */
export function fail(error: unknown): never {
  if (error instanceof Refusal) {
    const { problem, fault, hint } = error;
    writeProblem({ status: problem.status, ...problem.body, code: problem.code, ...(fault ? { fault } : {}), ...(hint ? { hint } : {}) });
    process.exit(problem.status >= 500 ? EXIT.unavailable : EXIT.refused);
  }
  if (error instanceof ApiProblem) {
    writeProblem({ status: error.status, ...error.body, code: error.code });
    process.exit(error.status >= 500 ? EXIT.unavailable : EXIT.refused);
  }
  if (error instanceof UsageError) {
    writeProblem({ code: 'usage', detail: error.message });
    process.exit(EXIT.refused);
  }
  // fetch rejects with a TypeError (undici: "fetch failed", the socket's error as `cause`) when no
  // answer came; anything else is a fault of this program, not a service that cannot be reached.
  const unreachable = error instanceof TypeError && 'cause' in error;
  const detail =
    error instanceof Error
      ? `${error.message}${unreachable && error.cause instanceof Error ? `: ${error.cause.message}` : ''}`
      : String(error);
  writeProblem(
    unreachable
      ? { code: 'unreachable', detail: `${redactUrl(process.env.GRANT_BROKER_URL ?? DEFAULT_BROKER_URL)} could not be reached: ${detail}` }
      : { code: 'internal_error', detail },
  );
  process.exit(EXIT.unavailable);
}

function writeProblem(problem: Record<string, unknown>): void {
  process.stderr.write(`${scrubCredentials(JSON.stringify(problem))}\n`);
}
