import { createClient } from '@grant-broker/client';

/** A signed-in console: the human JWT the API verifies, kept for this tab only. */
export interface Session {
  token: string;
  userId: string;
  /** ISO time; the console signs out when it passes. */
  expiresAt: string;
}

export interface ConsoleConfig {
  oidc: { issuer: string; clientId: string } | null;
  links: boolean;
}

const KEY = 'grant-broker.session';

// sessionStorage, not a cookie: the API takes bearer tokens only, so no request is ever
// authenticated by the browser on its own (no CSRF), and a closed tab forgets the token.
export function loadSession(): Session | null {
  try {
    const session = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Session | null;
    if (session && Date.parse(session.expiresAt) > Date.now()) return session;
  } catch {
    // A damaged entry is no session.
  }
  sessionStorage.removeItem(KEY);
  return null;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch('/console/config.json', { headers: { Accept: 'application/json' } });
  if (!response.ok) throw new Error(`the console's configuration did not load (${response.status})`);
  return (await response.json()) as ConsoleConfig;
}

/** Trades a one-time console link's code for a session (development sign-in). */
export async function redeemLink(code: string): Promise<Session> {
  const response = await fetch('/console/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code }),
  });
  const body = (await response.json().catch(() => ({}))) as Partial<Session> & { detail?: string };
  if (!response.ok || !body.token || !body.userId || !body.expiresAt) {
    throw new Error(body.detail ?? `sign-in failed (${response.status})`);
  }
  return { token: body.token, userId: body.userId, expiresAt: body.expiresAt };
}

export type Api = ReturnType<typeof createClient>;

/** The repository's typed SDK, for this origin and this session's token. */
export function apiFor(session: Session): Api {
  return createClient({
    baseUrl: window.location.origin,
    token: session.token,
    retries: 1,
    // Called bare, window.fetch refuses to run with another `this`.
    fetch: (input, init) => window.fetch(input, init),
  });
}
