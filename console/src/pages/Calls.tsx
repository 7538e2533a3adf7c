import { useState } from 'react';
import type { Api } from '../session';
import { VisibleText } from '../parts/ArgsTree';
import { Pager } from '../parts/Pager';
import { Empty, Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

export function CallsPage({ api, grantId }: { api: Api; grantId: string }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
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
      <h1 id="calls-title">
        Calls of <code>{grantId}</code>
      </h1>
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
          <table>
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
                  <td>
                    <Time iso={call.requestedAt} />
                  </td>
                  <td>
                    <code>{call.tool}</code>
                  </td>
                  <td>
                    <span className={`badge ${call.outcome}`}>{call.outcome.replaceAll('_', ' ')}</span>
                  </td>
                  <td>{call.reason}</td>
                  <td>
                    <code>
                      <VisibleText text={call.principal.id} />
                    </code>
                  </td>
                  <td>{call.approvalId ? `${call.approvalId}${call.approvedBy ? ` by ${call.approvedBy}` : ''}` : '—'}</td>
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
