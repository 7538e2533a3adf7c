import { useEffect, useState } from 'react';

const BASE = '/console';

/** The console's path below /console (e.g. "/approvals"), kept in step with the address bar. */
export function usePath(): string {
  const [path, setPath] = useState(current);
  useEffect(() => {
    const update = () => setPath(current());
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, []);
  return path;
}

function current(): string {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : '/';
  return path === '' ? '/' : path;
}

export function href(path: string): string {
  return BASE + path;
}

export function navigate(path: string, replace = false): void {
  if (replace) window.history.replaceState(null, '', href(path));
  else window.history.pushState(null, '', href(path));
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** Route patterns like "/pods/:podId/grants"; params are decoded, one path segment each. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const have = path.split('/');
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i]!;
    if (w.startsWith(':')) {
      try {
        params[w.slice(1)] = decodeURIComponent(h);
      } catch {
        return null;
      }
      if (!params[w.slice(1)]) return null;
    } else if (w !== h) return null;
  }
  return params;
}
