/**
 * True for errors that mean Postgres or Redis could not answer (as opposed to a bug or a refused
 * request). Those become 503 `dependency_unavailable`: the service fails closed.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export class DependencyUnavailableError extends Error {}

export function isDependencyFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof DependencyUnavailableError) return true;
  const { code, name, message } = error as Error & { code?: string };
  if (code && NETWORK_CODES.has(code)) return true;
  // Postgres: class 08 (connection exception), 53 (insufficient resources), 57P0x (shutdown).
  if (code && (/^08/.test(code) || /^53/.test(code) || /^57P0/.test(code))) return true;
  if (name === 'KnexTimeoutError' || name === 'MaxRetriesPerRequestError') return true;
  if (/Connection terminated|Connection is closed|Command timed out|Stream isn't writeable|connect ECONNREFUSED/.test(message)) {
    return true;
  }
  return error instanceof AggregateError && error.errors.some(isDependencyFailure);
}
