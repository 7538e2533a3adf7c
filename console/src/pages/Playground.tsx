import { useState, type FormEvent } from 'react';
import type { components } from '@grant-broker/client';
import type { Api } from '../session';
import { Link } from '../parts/Link';
import { describeError, Empty, Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

type Outcome = components['schemas']['PlaygroundOutcome'];
type Answer = components['schemas']['PlaygroundAnswer'];

function OutcomeCard({ title, outcome }: { title: string; outcome: Outcome }) {
  const id = `outcome-${title.replaceAll(' ', '-').toLowerCase()}`;
  const explanation = outcome.explanation;
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <dl className="facts">
        <dt>Revision</dt>
        <dd>
          <code>{outcome.revision}</code>
        </dd>
        <dt>Decision</dt>
        <dd>
          <span className={`badge ${outcome.allow ? 'active' : 'denied'}`}>{outcome.allow ? 'allow' : 'deny'}</span> {outcome.reason}
        </dd>
        {explanation && (
          <>
            <dt>Rule</dt>
            <dd>
              <code>{explanation.rule}</code>
            </dd>
            <dt>Where</dt>
            <dd>
              level {explanation.level} (<code>{explanation.grantId}</code>){explanation.dimension ? `, ${explanation.dimension}` : ''}
              {explanation.value ? `: ${explanation.value}` : ''}
              {explanation.allowed ? ` (allowed: ${explanation.allowed.join(', ')})` : ''}
            </dd>
            <dt>What would change it</dt>
            <dd>{explanation.unlock.replaceAll('_', ' ')}</dd>
          </>
        )}
        <dt>Org rules that refused</dt>
        <dd>{outcome.orgDenials.length ? outcome.orgDenials.map((d) => `${d.package}: ${d.message || d.reason}`).join('; ') : 'none'}</dd>
        <dt>Shadow findings</dt>
        <dd>{outcome.shadow.length ? outcome.shadow.map((d) => `${d.package} would ${d.effect}: ${d.reason}`).join('; ') : 'none'}</dd>
      </dl>
    </section>
  );
}

export function PlaygroundPage({ api }: { api: Api }) {
  const recent = useLoad(() => api.unwrap(api.api.GET('/api/policy/playground/recent', { params: { query: { limit: 20 } } })), [api]);
  const [input, setInput] = useState('');
  const [bundle, setBundle] = useState<File | null>(null);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const evaluate = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setAnswer(null);
    const form = new FormData();
    form.set('input', input);
    if (bundle) form.set('bundle', bundle);
    try {
      setAnswer(await api.unwrap(api.api.POST('/api/policy/playground', { body: {} as never, bodySerializer: () => form })));
    } catch (caught) {
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  };

  if (recent.result.state === 'failed' && (recent.result.error as { status?: number }).status === 404) {
    return (
      <section aria-labelledby="playground-title">
        <h1 id="playground-title">Policy playground</h1>
        <Failed error={recent.result.error} />
        <p className="hint">The playground is for security admins: pod owners and admins, and people the operator names.</p>
      </section>
    );
  }
  return (
    <section aria-labelledby="playground-title">
      <h1 id="playground-title">Policy playground</h1>
      <p className="hint">
        Try a broker check against the <Link to="/policy">serving policy</Link> and, if you upload one, a candidate bundle. Nothing is
        charged, recorded or logged.
      </p>
      <h2>Recent checks</h2>
      {recent.result.state === 'loading' && <Loading what="recent checks" />}
      {recent.result.state === 'failed' && <Failed error={recent.result.error} retry={recent.reload} />}
      {recent.result.state === 'ready' && recent.result.data.items.length === 0 && (
        <Empty>
          <p>No check is in this replica's decision log yet: paste an input below.</p>
        </Empty>
      )}
      {recent.result.state === 'ready' && recent.result.data.items.length > 0 && (
        <ul className="recent" aria-label="Recent checks">
          {recent.result.data.items.map((check) => (
            <li key={check.decisionId}>
              <button type="button" className="small" onClick={() => setInput(JSON.stringify(check.input, null, 2))}>
                Try {check.tool ?? 'this check'}
              </button>{' '}
              <span className={`badge ${check.allow ? 'active' : 'denied'}`}>{check.allow ? 'allowed' : 'denied'}</span> {check.reason} ·{' '}
              <Time iso={check.at} />
            </li>
          ))}
        </ul>
      )}
      <form className="playground" onSubmit={(event) => void evaluate(event)}>
        <label>
          Check input (JSON)
          <textarea value={input} onChange={(event) => setInput(event.target.value)} rows={12} spellCheck={false} required />
        </label>
        <label>
          Candidate bundle (.tar.gz, optional)
          <input type="file" accept=".tar.gz,.tgz,application/gzip" onChange={(event) => setBundle(event.target.files?.[0] ?? null)} />
        </label>
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy || input.trim() === ''}>
            Evaluate
          </button>
        </div>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {answer && (
        <>
          <p role="status" className="sr-status">
            {answer.candidate === null
              ? 'Evaluated against the serving policy.'
              : answer.same
                ? 'Both policies agree.'
                : 'The two policies differ.'}
            {answer.argsMasked ? ' The arguments were masked in the decision log: rules read {} for args.' : ''}
          </p>
          <div className="columns">
            <OutcomeCard title="Serving policy" outcome={answer.serving} />
            {answer.candidate && <OutcomeCard title="Candidate bundle" outcome={answer.candidate} />}
          </div>
        </>
      )}
    </section>
  );
}
