import { useEffect, useMemo, useState } from 'react';
import { AgentsPage } from './pages/Agents';
import { ApprovalsPage } from './pages/Approvals';
import { CallsPage } from './pages/Calls';
import { ConsentPage } from './pages/Consent';
import { GrantsPage } from './pages/Grants';
import { OverviewPage } from './pages/Overview';
import { PolicyPage } from './pages/Policy';
import { PlaygroundPage } from './pages/Playground';
import { SignInPage } from './pages/SignIn';
import { Link } from './parts/Link';
import { Failed, Loading } from './parts/states';
import { match, navigate, usePath } from './router';
import { apiFor, clearSession, loadConfig, loadSession, type ConsoleConfig, type Session } from './session';

const LAST_POD = 'grant-broker.pod';
/** Where a person was going when the console sent them to sign in (a consent page), for this tab. */
const RETURN_TO = 'grant-broker.return-to';
const CONSENT = '/oauth/consent/:uid';

/** The page to open after a sign-in: the consent page that asked for it, else the overview. */
function takeReturnPath(): string {
  const saved = sessionStorage.getItem(RETURN_TO);
  sessionStorage.removeItem(RETURN_TO);
  return saved && match(CONSENT, saved) ? saved : '/';
}

type PodChoice = { id: string; name: string; role: string };

/** The pod switcher: the viewer's pods by name; choosing one opens the same page for it. */
function PodSwitcher({
  pods,
  podId,
  path,
  onChoose,
}: {
  pods: PodChoice[];
  podId: string | null;
  path: string;
  onChoose: (id: string) => void;
}) {
  const named = (pod: PodChoice) => (pods.filter((p) => p.name === pod.name).length > 1 ? `${pod.name} (…${pod.id.slice(-4)})` : pod.name);
  const choose = (id: string) => {
    onChoose(id);
    const page = /^\/pods\/[^/]+\/(grants|agents)$/.exec(path)?.[1];
    navigate(page ? `/pods/${encodeURIComponent(id)}/${page}` : '/', true);
  };
  if (pods.length === 0) return null;
  return (
    <label className="pod-switcher">
      Pod{' '}
      <select value={podId ?? ''} onChange={(event) => choose(event.target.value)}>
        {!pods.some((pod) => pod.id === podId) && <option value="">{podId ? 'another pod' : 'choose a pod'}</option>}
        {pods.map((pod) => (
          <option key={pod.id} value={pod.id}>
            {named(pod)} ({pod.role})
          </option>
        ))}
      </select>
    </label>
  );
}

/** The viewer's pods (up to 200), for the switcher and for names. */
function usePods(session: Session | null): PodChoice[] {
  const [pods, setPods] = useState<PodChoice[]>([]);
  useEffect(() => {
    if (!session) return;
    apiFor(session)
      .unwrap(apiFor(session).api.GET('/api/pods', { params: { query: { limit: 200 } } }))
      .then(
        (page) => setPods(page.items),
        () => setPods([]),
      );
  }, [session]);
  return pods;
}

function Page({
  path,
  session,
  pod,
  onSignedOut,
}: {
  path: string;
  session: Session;
  pod: { id: string | null; name?: string };
  onSignedOut: () => void;
}) {
  const api = useMemo(() => apiFor(session), [session]);
  let params: Record<string, string> | null;
  if ((params = match(CONSENT, path))) return <ConsentPage session={session} uid={params.uid!} onSignedOut={onSignedOut} />;
  if (path === '/') return <OverviewPage api={api} podId={pod.id} podName={pod.name} />;
  if (path === '/approvals') return <ApprovalsPage api={api} />;
  if (path === '/policy') return <PolicyPage api={api} />;
  if (path === '/policy/playground') return <PlaygroundPage api={api} />;
  if ((params = match('/pods/:podId/grants', path))) return <GrantsPage api={api} podId={params.podId!} podName={pod.name} />;
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
  ['/', 'Overview'],
  ['/approvals', 'Pending approvals'],
  ['/policy', 'Policy'],
  ['/policy/playground', 'Policy playground'],
  ['/pods/:podId/grants', 'Grants'],
  ['/pods/:podId/agents', 'Agents'],
  ['/grants/:grantId/calls', 'Calls'],
  [CONSENT, 'Connect an application'],
  ['/sign-in', 'Sign in'],
  ['/callback', 'Sign in'],
];

export function App() {
  const path = usePath();
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const [configError, setConfigError] = useState<unknown>(null);
  const [session, setSession] = useState<Session | null>(loadSession);
  const pods = usePods(session);
  const [lastPod, setLastPod] = useState(() => localStorage.getItem(LAST_POD));
  const choosePod = (id: string) => {
    localStorage.setItem(LAST_POD, id);
    setLastPod(id);
  };
  const podId = match('/pods/:podId/grants', path)?.podId ?? match('/pods/:podId/agents', path)?.podId ?? lastPod ?? pods[0]?.id ?? null;

  useEffect(() => {
    loadConfig().then(setConfig, setConfigError);
  }, []);
  useEffect(() => {
    const current = match('/pods/:podId/grants', path)?.podId ?? match('/pods/:podId/agents', path)?.podId;
    if (current) choosePod(current);
    const title = TITLES.find(([pattern]) => match(pattern, path))?.[1] ?? 'Console';
    document.title = `${title} · Grant broker`;
  }, [path]);
  useEffect(() => {
    if (session || path === '/sign-in' || path === '/callback') return;
    // A host's consent page survives the sign-in: the person comes back to it (the interaction waits ten minutes).
    if (match(CONSENT, path)) sessionStorage.setItem(RETURN_TO, path);
    navigate('/sign-in', true);
  }, [path, session]);
  const signOut = () => {
    clearSession();
    setSession(null);
  };

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
              <Link to="/" current={path === '/'}>
                Overview
              </Link>
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
            {/* The consent form has its own "Pod": one choice of pod on that page, not two. */}
            {!match(CONSENT, path) && <PodSwitcher pods={pods} podId={podId} path={path} onChoose={choosePod} />}
            <span>
              Signed in as <strong>{session.userId}</strong>
            </span>
            <button
              type="button"
              onClick={() => {
                signOut();
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
            session={session}
            onSignedIn={(fresh) => {
              setSession(fresh);
              navigate(takeReturnPath(), true);
            }}
          />
        )}
        {config && !signingIn && session && (
          <Page path={path} session={session} pod={{ id: podId, name: pods.find((p) => p.id === podId)?.name }} onSignedOut={signOut} />
        )}
      </main>
    </>
  );
}
