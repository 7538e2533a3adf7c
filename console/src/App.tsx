import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { AgentsPage } from './pages/Agents';
import { ApprovalsPage } from './pages/Approvals';
import { CallsPage } from './pages/Calls';
import { GrantsPage } from './pages/Grants';
import { PolicyPage } from './pages/Policy';
import { SignInPage } from './pages/SignIn';
import { Link } from './parts/Link';
import { Failed, Loading } from './parts/states';
import { match, navigate, usePath } from './router';
import { apiFor, clearSession, loadConfig, loadSession, type ConsoleConfig, type Session } from './session';

const LAST_POD = 'grant-broker.pod';

function PodPicker({ podId }: { podId: string | null }) {
  const [value, setValue] = useState(podId ?? '');
  useEffect(() => setValue(podId ?? ''), [podId]);
  const open = (event: FormEvent) => {
    event.preventDefault();
    const id = value.trim();
    if (id) navigate(`/pods/${encodeURIComponent(id)}/grants`);
  };
  return (
    <form className="pod-picker" onSubmit={open} role="search" aria-label="Open a pod">
      <label>
        Pod <input type="text" value={value} onChange={(event) => setValue(event.target.value)} placeholder="pod_…" spellCheck={false} />
      </label>
      <button type="submit">Open</button>
    </form>
  );
}

function Page({ path, session }: { path: string; session: Session }) {
  const api = useMemo(() => apiFor(session), [session]);
  let params: Record<string, string> | null;
  if (path === '/approvals') return <ApprovalsPage api={api} />;
  if (path === '/policy') return <PolicyPage api={api} />;
  if ((params = match('/pods/:podId/grants', path))) return <GrantsPage api={api} podId={params.podId!} />;
  if ((params = match('/pods/:podId/agents', path))) return <AgentsPage api={api} podId={params.podId!} />;
  if ((params = match('/grants/:grantId/calls', path))) return <CallsPage api={api} grantId={params.grantId!} />;
  return (
    <section aria-labelledby="missing-title">
      <h1 id="missing-title">No such page</h1>
      <p>
        Go to the <Link to="/approvals">pending approvals</Link>.
      </p>
    </section>
  );
}

const TITLES: Array<[string, string]> = [
  ['/approvals', 'Pending approvals'],
  ['/policy', 'Policy'],
  ['/pods/:podId/grants', 'Grants'],
  ['/pods/:podId/agents', 'Agents'],
  ['/grants/:grantId/calls', 'Calls'],
  ['/sign-in', 'Sign in'],
  ['/callback', 'Sign in'],
];

export function App() {
  const path = usePath();
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const [configError, setConfigError] = useState<unknown>(null);
  const [session, setSession] = useState<Session | null>(loadSession);
  const podId = match('/pods/:podId/grants', path)?.podId ?? match('/pods/:podId/agents', path)?.podId ?? localStorage.getItem(LAST_POD);

  useEffect(() => {
    loadConfig().then(setConfig, setConfigError);
  }, []);
  useEffect(() => {
    const current = match('/pods/:podId/grants', path)?.podId ?? match('/pods/:podId/agents', path)?.podId;
    if (current) localStorage.setItem(LAST_POD, current);
    const title = TITLES.find(([pattern]) => match(pattern, path))?.[1] ?? 'Console';
    document.title = `${title} · Grant broker`;
  }, [path]);
  useEffect(() => {
    if (path === '/' || path === '') navigate('/approvals', true);
    else if (!session && path !== '/sign-in' && path !== '/callback') navigate('/sign-in', true);
  }, [path, session]);

  const signingIn = path === '/sign-in' || path === '/callback';
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          <span className="brand">Grant broker</span>
          {session && (
            <>
              <Link to="/approvals" current={path === '/approvals'}>
                Approvals
              </Link>
              {podId && (
                <>
                  <Link to={`/pods/${encodeURIComponent(podId)}/grants`} current={path.endsWith('/grants')}>
                    Grants
                  </Link>
                  <Link to={`/pods/${encodeURIComponent(podId)}/agents`} current={path.endsWith('/agents')}>
                    Agents
                  </Link>
                </>
              )}
              <Link to="/policy" current={path === '/policy'}>
                Policy
              </Link>
            </>
          )}
        </nav>
        {session && (
          <div className="who">
            <PodPicker podId={podId} />
            <span>
              Signed in as <strong>{session.userId}</strong>
            </span>
            <button
              type="button"
              onClick={() => {
                clearSession();
                setSession(null);
                navigate('/sign-in');
              }}
            >
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {configError !== null && <Failed error={configError} />}
        {!config && configError === null && <Loading what="the console" />}
        {config && signingIn && (
          <SignInPage
            config={config}
            callback={path === '/callback'}
            onSignedIn={(fresh) => {
              setSession(fresh);
              navigate('/approvals', true);
            }}
          />
        )}
        {config && !signingIn && session && <Page path={path} session={session} />}
      </main>
    </>
  );
}
