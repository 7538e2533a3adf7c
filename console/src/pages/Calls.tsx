import { useState } from 'react';
import type { Api } from '../session';
import { CopyId } from '../parts/CopyId';
import { GrantName, PrincipalName, useAllAgentNames } from '../parts/names';
import { Pager } from '../parts/Pager';
import { Empty, Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

export function CallsPage({ api, grantId }: { api: Api; grantId: string }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const agents = useAllAgentNames(api);
  const grant = useLoad(() => api.unwrap(api.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } })), [api, grantId]);
  const { result, reload } = useLoad(
    () =>
      api.unwrap(
        api.api.GET('/api/grants/{grantId}/calls', { params: { path: { grantId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }),
      ),
    [api, grantId, cursor],
  );
  return (
    <section aria-labelledby="calls-title">
      <h1 id="calls-title">Calls</h1>
      <p>
        Of the grant <GrantName api={api} grantId={grantId} />
      </p>
      {grant.result.state === 'ready' && (
        <p className="hint">
          Tools {grant.result.data.tools.join(', ')}; write mode {grant.result.data.writeMode}; {grant.result.data.status}.
        </p>
      )}
      {result.state === 'loading' && <Loading what="calls" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' && result.data.items.length === 0 && (
        <Empty>
          <p>No call has been checked on this grant yet.</p>
        </Empty>
      )}
      {result.state === 'ready' && result.data.items.length > 0 && (
        <div className="table-wrap">
          <table className="cards-on-phone">
            <caption className="sr-only">Call trail, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Requested</th>
                <th scope="col">Tool</th>
                <th scope="col">Outcome</th>
                <th scope="col">Reason</th>
                <th scope="col">Principal</th>
                <th scope="col">Approval</th>
              </tr>
            </thead>
            <tbody>
              {result.data.items.map((call) => (
                <tr key={call.id}>
                  <td data-label="Requested">
                    <Time iso={call.requestedAt} />
                  </td>
                  <td data-label="Tool">
                    <code>{call.tool}</code>
                  </td>
                  <td data-label="Outcome">
                    <span className={`badge ${call.outcome}`}>{call.outcome.replaceAll('_', ' ')}</span>
                  </td>
                  <td data-label="Reason">{call.reason}</td>
                  <td data-label="Principal">
                    <PrincipalName principal={call.principal} agents={agents} />
                  </td>
                  <td data-label="Approval">
                    {call.approvalId?.startsWith('apr_') ? (
                      <>
                        <CopyId id={call.approvalId} />
                        {call.approvedBy ? ` by ${call.approvedBy}` : ''}
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {result.state === 'ready' && <Pager cursors={cursors} next={result.data.nextCursor} onPage={setCursors} label="Call pages" />}
    </section>
  );
}
