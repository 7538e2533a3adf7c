import { useEffect, useRef, useState, type FormEvent } from 'react';
import { VisibleText } from '../parts/ArgsTree';
import { describeError, Failed, Loading } from '../parts/states';
import { absolute } from '../parts/time';
import { useLoad } from '../parts/useLoad';
import type { Session } from '../session';

/** What `GET /oauth/consent/:uid/details` answers: the host, and the person's choices. */
interface ConsentDetails {
  uid: string;
  client: { clientId: string; name: string; redirectHost: string };
  resource: string;
  pods: Array<{
    pod: { id: string; name: string };
    agents: Array<{ id: string; name: string; grants: ConsentGrant[] }>;
  }>;
}

interface ConsentGrant {
  id: string;
  tools: string[];
  writeMode: string;
  expiresAt: string | null;
  oauthClient: { clientId: string; name: string } | null;
}

/** A failed answer of the consent endpoints, shaped as `describeError` reads the API's problems. */
class ConsentProblem extends Error {
  constructor(
    readonly status: number,
    readonly code?: string,
    readonly detail?: string,
  ) {
    super(detail ?? `the authorization server answered ${status}`);
  }
}

/**
 * The consent endpoints belong to the authorization server, not the API: plain fetches, with the
 * person's console token as the bearer and, because they sit under the interaction's path, the
 * browser's interaction cookie beside it (so only the browser that started the request consents).
 */
async function consentFetch<T>(session: Session, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      Accept: 'application/json',
      Authorization: `Bearer ${session.token}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) {
    throw new ConsentProblem(
      response.status,
      typeof answer.code === 'string' ? answer.code : undefined,
      typeof answer.detail === 'string' ? answer.detail : undefined,
    );
  }
  return answer as T;
}

/** A `datetime-local` value (UTC, to the minute) and back. */
const toLocalInput = (iso: string) => iso.slice(0, 16);
const fromLocalInput = (value: string) => (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(value) ? `${value}:00.000Z` : null);

const grantLabel = (grant: ConsentGrant) =>
  [
    grant.tools.join(', '),
    `write mode ${grant.writeMode}`,
    grant.expiresAt ? `until ${absolute(grant.expiresAt)}` : 'no expiry',
    grant.oauthClient ? `already held by ${grant.oauthClient.name}` : null,
  ]
    .filter(Boolean)
    .join(' · ');

type FieldErrors = { grant?: string; tools?: string; expiry?: string };

/**
 * /console/oauth/consent/:uid — where the authorization endpoint sends a person when an MCP host
 * asks to connect (CONTRACT §20). The person picks a pod, an agent they may run there and a grant
 * that agent holds behind the requested gateway, unticks the tools the host should not get and
 * may shorten the expiry; "Allow" makes that narrower child grant and sends the browser back to the
 * host with the code, "Deny" sends it back with access_denied.
 */
export function ConsentPage({ session, uid, onSignedOut }: { session: Session; uid: string; onSignedOut: () => void }) {
  const { result, reload } = useLoad(
    () => consentFetch<ConsentDetails>(session, `/oauth/consent/${encodeURIComponent(uid)}/details`),
    [session, uid],
  );
  useEffect(() => {
    if (result.state === 'failed' && (result.error as ConsentProblem).status === 401) onSignedOut();
  }, [result]);
  if (result.state === 'loading') return <Loading what="the connection request" />;
  if (result.state === 'failed') {
    if ((result.error as ConsentProblem).status === 404) {
      return (
        <section aria-labelledby="consent-title" className="consent">
          <h1 id="consent-title">No connection request here</h1>
          <p role="alert">
            This request is unknown, already answered, expired, or was started in another browser. Start the connection again from the
            application that asked.
          </p>
        </section>
      );
    }
    return <Failed error={result.error} retry={reload} />;
  }
  return <ConsentForm session={session} details={result.data} onSignedOut={onSignedOut} />;
}

function ConsentForm({ session, details, onSignedOut }: { session: Session; details: ConsentDetails; onSignedOut: () => void }) {
  const { client } = details;
  const pods = details.pods;
  const [podId, setPodId] = useState(() => (pods.find((p) => p.agents.some((a) => a.grants.length > 0)) ?? pods[0])?.pod.id ?? '');
  const pod = pods.find((p) => p.pod.id === podId);
  const [agentId, setAgentId] = useState(() => (pod?.agents.find((a) => a.grants.length > 0) ?? pod?.agents[0])?.id ?? '');
  const agent = pod?.agents.find((a) => a.id === agentId);
  const [grantId, setGrantId] = useState(() => agent?.grants[0]?.id ?? '');
  const grant = agent?.grants.find((g) => g.id === grantId);
  const [tools, setTools] = useState<Set<string>>(() => new Set(grant?.tools ?? []));
  const [expiry, setExpiry] = useState(() => (grant?.expiresAt ? toLocalInput(grant.expiresAt) : ''));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState<'allow' | 'deny' | null>(null);
  const failureRef = useRef<HTMLParagraphElement>(null);
  const grantRef = useRef<HTMLSelectElement>(null);
  const toolsRef = useRef<HTMLFieldSetElement>(null);
  const expiryRef = useRef<HTMLInputElement>(null);

  const chooseGrant = (next: ConsentGrant | undefined) => {
    setGrantId(next?.id ?? '');
    setTools(new Set(next?.tools ?? []));
    setExpiry(next?.expiresAt ? toLocalInput(next.expiresAt) : '');
    setErrors({});
  };
  const chooseAgent = (next: ConsentDetails['pods'][number]['agents'][number] | undefined) => {
    setAgentId(next?.id ?? '');
    chooseGrant(next?.grants[0]);
  };
  const choosePod = (id: string) => {
    setPodId(id);
    const nextPod = pods.find((p) => p.pod.id === id);
    chooseAgent(nextPod?.agents.find((a) => a.grants.length > 0) ?? nextPod?.agents[0]);
  };

  useEffect(() => {
    if (failure) failureRef.current?.focus();
  }, [failure]);

  const validate = (): { errors: FieldErrors; expiresAt?: string } => {
    const found: FieldErrors = {};
    if (!grant) found.grant = 'Pick a grant for the host to use.';
    if (grant && tools.size === 0) found.tools = 'Tick at least one tool the host may use.';
    let expiresAt: string | undefined;
    if (grant && expiry !== '') {
      const iso = fromLocalInput(expiry);
      if (!iso) found.expiry = 'Give the expiry as a date and time (UTC).';
      else if (Date.parse(iso) <= Date.now()) found.expiry = 'The expiry has passed: pick a later time.';
      else if (grant.expiresAt && Date.parse(iso) > Date.parse(grant.expiresAt)) {
        found.expiry = `The expiry cannot be later than the grant's own, ${absolute(grant.expiresAt)}.`;
      } else expiresAt = iso;
    }
    return { errors: found, expiresAt };
  };

  const send = async (decision: 'allow' | 'deny', body: Record<string, unknown>) => {
    setBusy(decision);
    setFailure(null);
    try {
      const { redirectTo } = await consentFetch<{ redirectTo: string }>(session, `/oauth/consent/${encodeURIComponent(details.uid)}`, {
        decision,
        ...body,
      });
      // Back through the authorization server, which sends the browser on to the host.
      window.location.assign(new URL(redirectTo, window.location.origin).href);
    } catch (caught) {
      setBusy(null);
      // A session that ended meanwhile: sign in again and come back; the request waits ten minutes.
      if ((caught as ConsentProblem).status === 401) return onSignedOut();
      setFailure(describeError(caught));
    }
  };

  const allow = (event: FormEvent) => {
    event.preventDefault();
    const checked = validate();
    setErrors(checked.errors);
    if (checked.errors.grant) return grantRef.current?.focus();
    if (checked.errors.tools) return toolsRef.current?.querySelector('input')?.focus();
    if (checked.errors.expiry) return expiryRef.current?.focus();
    void send('allow', {
      agentId,
      grantId,
      tools: grant!.tools.filter((tool) => tools.has(tool)),
      ...(checked.expiresAt ? { expiresAt: checked.expiresAt } : {}),
    });
  };

  const nothingToOffer = !pods.some((p) => p.agents.some((a) => a.grants.length > 0));
  const errorList = Object.values(errors).filter(Boolean);
  return (
    <section aria-labelledby="consent-title" className="consent">
      <h1 id="consent-title">
        Connect <VisibleText text={client.name} />?
      </h1>
      <p>
        An application asks to use tools through this broker. What you allow below becomes a grant narrower than the one you pick, held by
        this application alone; you can revoke it on the pod&apos;s grants page at any time.
      </p>
      <dl className="facts">
        <dt>Application</dt>
        <dd className="client-name">
          <VisibleText text={client.name} />
        </dd>
        {client.clientId !== client.name && (
          <>
            <dt>Client id</dt>
            <dd>
              <code>
                <VisibleText text={client.clientId} />
              </code>
            </dd>
          </>
        )}
        <dt>Sends you back to</dt>
        <dd>
          <strong>{client.redirectHost || 'an address the application registered'}</strong>
        </dd>
        <dt>Gateway</dt>
        <dd>
          <code>{details.resource}</code>
        </dd>
      </dl>
      <p className="hint">The application names itself: check that the address it sends you back to is one you expect.</p>

      <form aria-labelledby="consent-form-title" onSubmit={allow} noValidate className="consent-form">
        <h2 id="consent-form-title">What may it use?</h2>
        {errorList.length > 0 && (
          <div className="error" role="alert">
            <p>The connection was not allowed yet:</p>
            <ul>
              {errorList.map((text) => (
                <li key={text}>{text}</li>
              ))}
            </ul>
          </div>
        )}
        {nothingToOffer && (
          <p className="warning" id="consent-nothing">
            You run no agent that holds a grant behind this gateway, so there is nothing to give this application. An owner or admin of a
            pod can consent for that pod&apos;s agents.
          </p>
        )}
        {pods.length > 0 && (
          <>
            <div className="field">
              <label htmlFor="consent-pod">Pod</label>
              <select id="consent-pod" value={podId} onChange={(event) => choosePod(event.target.value)}>
                {pods.map((p) => (
                  <option key={p.pod.id} value={p.pod.id}>
                    {p.pod.name}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor="consent-agent">Agent</label>
              <select
                id="consent-agent"
                value={agentId}
                onChange={(event) => chooseAgent(pod?.agents.find((a) => a.id === event.target.value))}
              >
                {(pod?.agents ?? []).map((a) => (
                  <option key={a.id} value={a.id}>
                    {a.name}
                    {a.grants.length === 0 ? ' (no grant behind this gateway)' : ''}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor="consent-grant">Grant</label>
              <select
                id="consent-grant"
                ref={grantRef}
                value={grantId}
                onChange={(event) => chooseGrant(agent?.grants.find((g) => g.id === event.target.value))}
                aria-invalid={errors.grant ? true : undefined}
                aria-describedby={errors.grant ? 'consent-grant-error' : undefined}
              >
                {(agent?.grants ?? []).length === 0 && <option value="">no grant of this agent</option>}
                {(agent?.grants ?? []).map((g) => (
                  <option key={g.id} value={g.id}>
                    {grantLabel(g)}
                  </option>
                ))}
              </select>
              {errors.grant && (
                <span className="error" id="consent-grant-error">
                  {errors.grant}
                </span>
              )}
            </div>
          </>
        )}
        {grant && (
          <>
            <fieldset
              ref={toolsRef}
              className="tools"
              aria-invalid={errors.tools ? true : undefined}
              aria-describedby={errors.tools ? 'consent-tools-error' : undefined}
            >
              <legend>Tools it may use</legend>
              {grant.tools.map((tool) => (
                <label key={tool} className="check">
                  <input
                    type="checkbox"
                    checked={tools.has(tool)}
                    onChange={(event) => {
                      const next = new Set(tools);
                      if (event.target.checked) next.add(tool);
                      else next.delete(tool);
                      setTools(next);
                      setErrors({ ...errors, tools: undefined });
                    }}
                  />{' '}
                  {tool}
                </label>
              ))}
              {errors.tools && (
                <p className="error" id="consent-tools-error">
                  {errors.tools}
                </p>
              )}
            </fieldset>
            <div className="field">
              <label htmlFor="consent-expiry">Expires (UTC)</label>
              <input
                id="consent-expiry"
                ref={expiryRef}
                type="datetime-local"
                value={expiry}
                max={grant.expiresAt ? toLocalInput(grant.expiresAt) : undefined}
                onChange={(event) => {
                  setExpiry(event.target.value);
                  setErrors({ ...errors, expiry: undefined });
                }}
                aria-invalid={errors.expiry ? true : undefined}
                aria-describedby={errors.expiry ? 'consent-expiry-error consent-expiry-hint' : 'consent-expiry-hint'}
              />
              <span className="hint" id="consent-expiry-hint">
                {grant.expiresAt ? `No later than the grant's own, ${absolute(grant.expiresAt)}.` : 'Empty: as long as the grant lasts.'}
              </span>
              {errors.expiry && (
                <span className="error" id="consent-expiry-error">
                  {errors.expiry}
                </span>
              )}
            </div>
          </>
        )}
        {failure && (
          <p className="error" role="alert" tabIndex={-1} ref={failureRef}>
            {failure}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy !== null || nothingToOffer}>
            Allow
          </button>
          <button type="button" disabled={busy !== null} onClick={() => void send('deny', {})}>
            Deny
          </button>
        </div>
        {busy && (
          <p role="status" aria-live="polite">
            {busy === 'allow' ? 'Creating the grant and returning you to the application…' : 'Returning you to the application…'}
          </p>
        )}
      </form>
    </section>
  );
}
