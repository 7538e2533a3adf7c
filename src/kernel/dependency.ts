/**
 * True for errors that mean Postgres or Redis could not answer (as opposed to a bug or a refused
 * request). Those become 503 `dependency_unavailable`: the service fails closed.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export class DependencyUnavailableError extends Error {}

export function isDependencyFailure(error: unknown): boolean {
  // Duck-typed, not instanceof Error: errors from Node's own net/dns code belong to another realm
  // than a sandboxed caller's Error (jest's, say), and must still count.
  if (typeof error !== 'object' || error === null) return false;
  if (error instanceof DependencyUnavailableError) return true;
  const { code, name, message = '', errors } = error as { code?: unknown; name?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // Postgres: class 08 (connection exception), 53 (insufficient resources), 57P0x (shutdown).
  if (typeof code === 'string' && (/^08/.test(code) || /^53/.test(code) || /^57P0/.test(code))) return true;
  if (name === 'KnexTimeoutError' || name === 'MaxRetriesPerRequestError') return true;
  // A database that refuses new sessions (ALTER DATABASE … allow_connections false) answers 55000.
  if (
    /Connection terminated|Connection is closed|Command timed out|Stream isn't writeable|connect ECONNREFUSED|not currently accepting connections/.test(
      String(message),
    )
  ) {
    return true;
  }
  // AggregateError (a connect attempt to several addresses fails with one per address).
  return Array.isArray(errors) && errors.some(isDependencyFailure);
}
