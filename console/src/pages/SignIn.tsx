import { useEffect, useState } from 'react';
import { finishSignIn, startSignIn } from '../oidc';
import { redeemLink, saveSession, type ConsoleConfig, type Session } from '../session';
import { describeError } from '../parts/states';

/** /console/sign-in (a one-time link's code in the fragment, or the OpenID Connect button) and /console/callback. */
export function SignInPage({
  config,
  callback,
  session,
  onSignedIn,
}: {
  config: ConsoleConfig;
  callback: boolean;
  /** This tab's session, if it has one: a spent link then says so instead of refusing. */
  session: Session | null;
  onSignedIn: (session: Session) => void;
}) {
  const [error, setError] = useState<string | null>(null);
  const [working, setWorking] = useState(false);

  useEffect(() => {
    const redeem = (trade: Promise<Session>) => {
      // The code is spent either way: take it out of the address bar and the history.
      window.history.replaceState(null, '', '/console/sign-in');
      setWorking(true);
      setError(null);
      trade.then(
        (session) => {
          saveSession(session);
          onSignedIn(session);
        },
        (caught: unknown) => {
          setWorking(false);
          setError(describeError(caught));
        },
      );
    };
    const linkCode = () => new URLSearchParams(window.location.hash.slice(1)).get('code');
    if (callback && config.oidc) redeem(finishSignIn(config.oidc, new URL(window.location.href)));
    else if (linkCode()) redeem(redeemLink(linkCode()!));
    // A link opened in the tab that already shows this page changes only the fragment: no page load.
    const onHash = () => {
      const code = linkCode();
      if (code) redeem(redeemLink(code));
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
    // Runs once per page load: a code is single-use.
  }, []);

  if (error && session) {
    // The tab is signed in already: the link was most likely this very sign-in's, opened again.
    return (
      <section className="sign-in" aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Already signed in</h1>
        <p role="status">
          This sign-in link cannot be used again ({error.replace(/\.$/, '')}), but this tab is still signed in as{' '}
          <strong>{session.userId}</strong>.
        </p>
        <p>
          <a href="/console/">Open the console</a>
        </p>
      </section>
    );
  }
  return (
    <section className="sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in</h1>
      {working && (
        <p role="status" aria-live="polite">
          Signing you in…
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {config.oidc && (
        <button
          type="button"
          className="primary"
          disabled={working}
          onClick={() => startSignIn(config.oidc!).catch((caught: unknown) => setError(describeError(caught)))}
        >
          Sign in with your identity provider
        </button>
      )}
      {config.links && (
        <p className="hint">
          Development: open a link printed by <code>npm run admin -- console-link --as owner</code> (one use, ten minutes).
        </p>
      )}
      {!config.oidc && !config.links && <p>No sign-in is configured: set OIDC_ISSUER and OIDC_CLIENT_ID.</p>}
    </section>
  );
}
