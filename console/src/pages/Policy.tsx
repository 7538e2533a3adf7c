import type { Api } from '../session';
import { Empty, Failed, Loading } from '../parts/states';
import { Link } from '../parts/Link';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

const MODE_TEXT = { enforce: 'enforced', shadow: 'shadow (logged, never enforced)', off: 'off' } as const;

export function PolicyPage({ api }: { api: Api }) {
  const { result, reload } = useLoad(() => api.unwrap(api.api.GET('/api/policy/status')), [api], 10_000);
  return (
    <section aria-labelledby="policy-title">
      <h1 id="policy-title">Policy</h1>
      <p>
        <Link to="/policy/playground">Try a check in the playground</Link> (security admins).
      </p>
      {result.state === 'loading' && <Loading what="the policy's status" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' && (
        <>
          <dl className="facts wide">
            <dt>Loaded revision</dt>
            <dd>
              <code>{result.data.revision ?? 'none'}</code>
            </dd>
            <dt>Source</dt>
            <dd>
              <code>{result.data.source}</code>
            </dd>
            <dt>Signature</dt>
            <dd>
              {result.data.signature === 'verified' && <span className="badge active">verified</span>}
              {result.data.signature === 'unsigned' && <span className="badge expired">unsigned (development)</span>}
              {result.data.signature === null && 'nothing loaded'}
            </dd>
            <dt>Last load error</dt>
            <dd>
              {result.data.lastError ? (
                <span className="error">
                  {result.data.lastError.message} (<Time iso={result.data.lastError.at} />)
                </span>
              ) : (
                'none since the last good load'
              )}
            </dd>
          </dl>
          <h2>Org packages</h2>
          {result.data.orgPackages.length === 0 ? (
            <Empty>
              <p>The security team has no org package in this policy.</p>
            </Empty>
          ) : (
            <div className="table-wrap">
              <table className="cards-on-phone">
                <caption className="sr-only">Org packages and their modes</caption>
                <thead>
                  <tr>
                    <th scope="col">Decision</th>
                    <th scope="col">Package</th>
                    <th scope="col">Mode</th>
                    <th scope="col">Shadow disagreements</th>
                  </tr>
                </thead>
                <tbody>
                  {result.data.orgPackages.map((pkg) => (
                    <tr key={`${pkg.decision}.${pkg.name}`}>
                      <td data-label="Decision">
                        <code>{pkg.decision}</code>
                      </td>
                      <th scope="row">
                        <code>{pkg.name}</code>
                      </th>
                      <td data-label="Mode">{MODE_TEXT[pkg.mode]}</td>
                      <td data-label="Shadow disagreements">{pkg.mode === 'shadow' ? pkg.shadowDisagreements : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <p className="hint">
            Shadow disagreements count the decisions a shadow package would have refused while the policy allowed them, on this replica
            since it started.
          </p>
        </>
      )}
    </section>
  );
}
