import type { components } from '@grant-broker/client';
import { Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

type Readiness = components['schemas']['Readiness'];

async function readiness(): Promise<Readiness> {
  // /readyz answers 503 with the same body while something is down: that is what to show then.
  const response = await fetch('/readyz', { headers: { Accept: 'application/json' } });
  if (response.status !== 200 && response.status !== 503) throw new Error(`/readyz answered ${response.status}`);
  return (await response.json()) as Readiness;
}

export function PolicyPage() {
  const { result, reload } = useLoad(readiness, [], 10_000);
  return (
    <section aria-labelledby="policy-title">
      <h1 id="policy-title">Policy</h1>
      {result.state === 'loading' && <Loading what="the policy's status" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' && (
        <>
          <dl className="facts wide">
            <dt>Service</dt>
            <dd>
              <span className={`badge ${result.data.status}`}>{result.data.status}</span> (Postgres{' '}
              {result.data.checks.postgres ? 'up' : 'down'}, Redis {result.data.checks.redis ? 'up' : 'down'}, policy{' '}
              {result.data.checks.policy ? 'loaded' : 'not loaded'})
            </dd>
            <dt>Loaded revision</dt>
            <dd>
              <code>{result.data.policyRevision ?? 'none'}</code>
            </dd>
            <dt>Source</dt>
            <dd>
              <code>{result.data.policySource}</code>
            </dd>
            <dt>Last load error</dt>
            <dd>
              {result.data.policyLastError ? (
                <span className="error">
                  {result.data.policyLastError.message} (<Time iso={result.data.policyLastError.at} />)
                </span>
              ) : (
                'none since the last good load'
              )}
            </dd>
          </dl>
        </>
      )}
    </section>
  );
}
