/**
 * Why a policy load was refused, as a short class for `/metrics` (a label must take few values,
 * and never a message that could carry a path, a URL or a server's answer).
 */
export type LoadErrorKind =
  | 'unsigned'
  | 'no_verification_key'
  | 'bad_signature'
  | 'incomplete'
  | 'invalid_bundle'
  | 'too_large'
  | 'rollback'
  | 'invalid_module'
  | 'missing_entrypoints'
  | 'http_error'
  | 'unreachable'
  | 'timeout'
  | 'unreadable'
  | 'untrusted_file'
  | 'other';

/** A refused load that knows its class and, when it was readable, the revision it claimed. */
export class PolicyLoadError extends Error {
  constructor(
    readonly kind: LoadErrorKind,
    message: string,
    readonly revision?: string,
  ) {
    super(message);
  }
}

/** The class of any error a load threw: its own, or one read from what Node and fetch throw. */
export function loadErrorKind(error: unknown): LoadErrorKind {
  if (error instanceof PolicyLoadError) return error.kind;
  const { name, code } = (error ?? {}) as { name?: string; code?: string };
  // AbortSignal.timeout() aborts fetch with a TimeoutError (an AbortError on older Nodes).
  if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  // fetch() rejects with a bare TypeError when the server cannot be reached at all.
  if (name === 'TypeError' && (error as Error).message === 'fetch failed') return 'unreachable';
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR' || code === 'EPERM') return 'unreadable';
  return 'other';
}

/**
 * A revision fit for a label: what a manifest claims comes from the bundle, possibly unsigned,
 * so anything but a short plain token is shown as `invalid` rather than echoed.
 */
export function revisionLabel(revision: string | undefined): string {
  if (revision === undefined) return 'unknown';
  return /^[A-Za-z0-9._:+@/-]{1,80}$/.test(revision) ? revision : 'invalid';
}
