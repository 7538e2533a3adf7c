import { useState } from 'react';
import type { Api } from '../session';
import { HourlyChart } from '../parts/HourlyChart';
import { Link } from '../parts/Link';
import { CopyId } from '../parts/CopyId';
import { grantTitle, useAgentNames } from '../parts/names';
import { Empty, Failed, Loading } from '../parts/states';
import { useLoad } from '../parts/useLoad';

type Range = '24h' | '7d';

/** A ranked list with a bar per item: the numbers are the text, the meter only shows their size. */
function Ranked({ items, label, empty }: { items: Array<{ name: string; calls: number }>; label: string; empty: string }) {
  if (items.length === 0) return <p className="hint">{empty}</p>;
  const most = Math.max(...items.map((item) => item.calls));
  return (
    <ol className="ranked" aria-label={label}>
      {items.map((item) => (
        <li key={item.name}>
          <code>{item.name}</code> <strong>{item.calls.toLocaleString('en')}</strong>
          <meter min={0} max={most} value={item.calls} aria-hidden="true" />
        </li>
      ))}
    </ol>
  );
}

/** A revision as people compare them: its first characters (the whole one is on the policy page). */
const shortRevision = (revision: string | null) => (revision ? (revision.length > 16 ? `${revision.slice(0, 15)}…` : revision) : 'none');

export function OverviewPage({ api, podId, podName }: { api: Api; podId: string | null; podName?: string }) {
  const [range, setRange] = useState<Range>('24h');
  const agents = useAgentNames(api, podId);
  const overview = useLoad(
    async () => (podId ? api.unwrap(api.api.GET('/api/pods/{podId}/overview', { params: { path: { podId }, query: { range } } })) : null),
    [api, podId, range],
    30_000,
  );
  const policy = useLoad(() => api.unwrap(api.api.GET('/api/policy/status')), [api], 30_000);
  const { result } = overview;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview{podName ? ` of ${podName}` : ''}</h1>
      {!podId && (
        <Empty>
          <p>You are not a member of any pod yet: its checks, denials and budgets would show here.</p>
        </Empty>
      )}
      {podId && (
        <div className="toolbar" role="group" aria-label="Range">
          {(['24h', '7d'] as const).map((value) => (
            <button key={value} type="button" className="small" aria-pressed={range === value} onClick={() => setRange(value)}>
              {value === '24h' ? 'Last 24 hours' : 'Last 7 days'}
            </button>
          ))}
          <CopyId id={podId} />
        </div>
      )}
      {result.state === 'loading' && podId && <Loading what="the overview" />}
      {result.state === 'failed' && <Failed error={result.error} retry={overview.reload} />}
      {result.state === 'ready' && result.data && (
        <>
          <dl className="tiles">
            <div>
              <dt>Allowed</dt>
              <dd>{result.data.totals.allowed.toLocaleString('en')}</dd>
            </div>
            <div>
              <dt>Denied</dt>
              <dd>{result.data.totals.denied.toLocaleString('en')}</dd>
            </div>
            <div>
              <dt>Asked for approval</dt>
              <dd>{result.data.totals.awaitingApproval.toLocaleString('en')}</dd>
            </div>
            <div>
              <dt>Waiting for a decision now</dt>
              <dd>
                <Link to="/approvals">{result.data.pendingApprovals.toLocaleString('en')}</Link>
              </dd>
            </div>
            <div>
              <dt>Policy revision</dt>
              <dd>
                {policy.result.state === 'ready' ? (
                  <Link to="/policy">
                    <code className="revision" title={policy.result.data.revision ?? undefined}>
                      {shortRevision(policy.result.data.revision)}
                    </code>
                  </Link>
                ) : (
                  '…'
                )}
              </dd>
            </div>
            <div>
              <dt>Shadow disagreements</dt>
              <dd>
                {policy.result.state === 'ready'
                  ? policy.result.data.orgPackages.reduce((sum, pkg) => sum + pkg.shadowDisagreements, 0).toLocaleString('en')
                  : '…'}
              </dd>
            </div>
          </dl>
          <section className="card" aria-labelledby="hourly-title">
            <h2 id="hourly-title">Checks per hour, {range === '24h' ? 'last 24 hours' : 'last 7 days'}</h2>
            <HourlyChart hours={result.data.hours} title="Checks per hour" />
          </section>
          <div className="columns">
            <section className="card" aria-labelledby="reasons-title">
              <h2 id="reasons-title">Denials by reason</h2>
              <Ranked
                items={result.data.denialsByReason.map((d) => ({ name: d.reason, calls: d.calls }))}
                label="Denials by reason"
                empty="No check was denied in this range."
              />
            </section>
            <section className="card" aria-labelledby="rules-title">
              <h2 id="rules-title">Denials by org rule</h2>
              <Ranked
                items={result.data.denialsByOrgRule.map((d) => ({ name: d.rule, calls: d.calls }))}
                label="Denials by org rule"
                empty="No org rule denied a check in this range."
              />
            </section>
          </div>
          <section className="card" aria-labelledby="budget-title">
            <h2 id="budget-title">Grant trees nearest their budget</h2>
            {result.data.nearestBudget.length === 0 ? (
              <p className="hint">No grant tree of this pod made an allowed call in the last day.</p>
            ) : (
              <ul className="budgets" aria-label="Grant trees nearest their budget">
                {result.data.nearestBudget.map((tree) => (
                  <li key={tree.grantId}>
                    <Link to={`/grants/${encodeURIComponent(tree.grantId)}/calls`}>{grantTitle(tree, { pod: podName, agents })}</Link>{' '}
                    <CopyId id={tree.grantId} />
                    <span>
                      {tree.used} of {tree.calls} used, {tree.remaining} left (window {Math.round(tree.windowMs / 60_000)} min)
                    </span>
                    <meter min={0} max={tree.calls} value={tree.used} aria-hidden="true" />
                  </li>
                ))}
              </ul>
            )}
          </section>
        </>
      )}
    </section>
  );
}
