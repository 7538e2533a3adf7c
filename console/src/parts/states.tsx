import { clearSession } from '../session';
import type { ReactNode } from 'react';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Failed({ error, retry }: { error: unknown; retry?: () => void }) {
  return (
    <div className="state error" role="alert">
      <p>{describeError(error)}</p>
      {(error as { status?: number } | null)?.status === 401 && (
        <p>
          <a href="/console/sign-in" onClick={clearSession}>
            Sign in again
          </a>
        </p>
      )}
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state empty">{children}</div>;
}

/** What went wrong, in words: the problem document's detail when the API sent one. */
export function describeError(error: unknown): string {
  const problem = error as { status?: number; code?: string; detail?: string; message?: string } | null;
  if (problem?.status === 404) return 'Not found, or not yours to see.';
  if (problem?.status === 401) return 'Your session has ended: sign in again.';
  if (problem?.code && problem.detail) return `${problem.detail} (${problem.code})`;
  return problem?.message ?? 'Something went wrong.';
}
