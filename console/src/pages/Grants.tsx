import { useEffect, useRef, useState } from 'react';
import type { Grant } from '@grant-broker/client';
import type { Api } from '../session';
import { VisibleText } from '../parts/ArgsTree';
import { Link } from '../parts/Link';
import { CopyId } from '../parts/CopyId';
import { grantTitle, useAgentNames } from '../parts/names';
import { Pager } from '../parts/Pager';
import { describeError, Empty, Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

/** 5,000 grants are 100 pages of this: each page is one list request and one usage read per row shown. */
const PAGE = 50;

/** The page's grants in tree order: each root (or grant whose parent is on another page) and then its children. */
function treeOrder(grants: Grant[]): Grant[] {
  const byParent = new Map<string, Grant[]>();
  const onPage = new Set(grants.map((g) => g.id));
  for (const grant of grants) {
    if (grant.parentId && onPage.has(grant.parentId)) byParent.set(grant.parentId, [...(byParent.get(grant.parentId) ?? []), grant]);
  }
  const ordered: Grant[] = [];
  const visit = (grant: Grant) => {
    ordered.push(grant);
    for (const child of byParent.get(grant.id) ?? []) visit(child);
  };
  for (const grant of grants) if (!grant.parentId || !onPage.has(grant.parentId)) visit(grant);
  return ordered;
}

function resourcesText(grant: Grant): string {
  const r = grant.resources as Record<string, string[] | undefined> | null | undefined;
  if (!r) return 'any';
  const parts = Object.entries(r)
    .filter(([, patterns]) => patterns && patterns.length > 0)
    .map(([dimension, patterns]) => `${dimension}: ${patterns!.join(', ')}`);
  return parts.length ? parts.join('; ') : 'any';
}

function Budget({ api, grant }: { api: Api; grant: Grant }) {
  const { result } = useLoad(
    () => api.unwrap(api.api.GET('/api/grants/{grantId}/usage', { params: { path: { grantId: grant.id } } })),
    [api, grant.id, grant.status],
  );
  if (result.state !== 'ready') return <span className="quiet">{result.state === 'loading' ? '…' : 'unknown'}</span>;
  const { used, remaining, calls } = result.data;
  return (
    <span>
      {used} used, {remaining} left <span className="quiet">of {calls}</span>
      <meter min={0} max={calls} value={used} aria-hidden="true" />
    </span>
  );
}

function RevokeButton({ api, grant, title, onRevoked }: { api: Api; grant: Grant; title: string; onRevoked: (text: string) => void }) {
  const [asking, setAsking] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    // A modal dialog sits in the top layer: no table's scroll box clips it, and focus stays in it.
    if (asking !== null && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [asking]);
  const ask = async () => {
    setError(null);
    try {
      const usage = await api.unwrap(api.api.GET('/api/grants/{grantId}/usage', { params: { path: { grantId: grant.id } } }));
      setAsking(usage.liveDescendants);
    } catch (caught) {
      setError(describeError(caught));
    }
  };
  const close = () => {
    dialog.current?.close();
    setAsking(null);
  };
  const revoke = async () => {
    setBusy(true);
    try {
      await api.unwrap(api.api.POST('/api/grants/{grantId}/revoke', { params: { path: { grantId: grant.id } } }));
      onRevoked(`Revoked ${title} (${grant.id}) and ${asking ?? 0} descendant grant${asking === 1 ? '' : 's'}.`);
      close();
    } catch (caught) {
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className="danger small" onClick={() => void ask()} aria-label={`Revoke ${title} (${grant.id})`}>
        Revoke
      </button>
      {error && asking === null && (
        <span role="alert" className="error">
          {' '}
          {error}
        </span>
      )}
      {asking !== null && (
        <dialog ref={dialog} role="alertdialog" aria-labelledby={`confirm-${grant.id}`} className="confirm" onCancel={close}>
          <p id={`confirm-${grant.id}`}>
            Revoke {title} (<code>{grant.id}</code>) and its {asking} descendant grant{asking === 1 ? '' : 's'}?
          </p>
          <button type="button" className="danger small" disabled={busy} onClick={() => void revoke()} autoFocus>
            Confirm revoke
          </button>{' '}
          <button type="button" className="small" onClick={close}>
            Cancel
          </button>
          {error && (
            <p role="alert" className="error">
              {error}
            </p>
          )}
        </dialog>
      )}
    </>
  );
}

export function GrantsPage({ api, podId, podName }: { api: Api; podId: string; podName?: string }) {
  const agents = useAgentNames(api, podId);
  const [cursors, setCursors] = useState<string[]>([]);
  const [status, setStatus] = useState<'' | 'active' | 'revoked' | 'expired'>('active');
  const [message, setMessage] = useState('');
  const cursor = cursors[cursors.length - 1];
  const { result, reload, refresh } = useLoad(
    () =>
      api.unwrap(
        api.api.GET('/api/pods/{podId}/grants', {
          params: { path: { podId }, query: { limit: PAGE, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) } },
        }),
      ),
    [api, podId, cursor, status],
  );
  return (
    <section aria-labelledby="grants-title">
      <h1 id="grants-title">Grants</h1>
      <div className="toolbar">
        <label>
          Show{' '}
          <select
            value={status}
            onChange={(event) => {
              setStatus(event.target.value as typeof status);
              setCursors([]);
            }}
          >
            <option value="active">active grants</option>
            <option value="revoked">revoked grants</option>
            <option value="expired">expired grants</option>
            <option value="">every grant</option>
          </select>
        </label>
      </div>
      <p className="sr-status" role="status" aria-live="polite">
        {message}
      </p>
      {result.state === 'loading' && <Loading what="grants" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' && result.data.items.length === 0 && (
        <Empty>
          <p>No {status || ''} grant in this pod.</p>
        </Empty>
      )}
      {result.state === 'ready' && result.data.items.length > 0 && (
        <div className="table-wrap">
          <table className="grants cards-on-phone">
            <caption className="sr-only">Grants of the pod, as trees, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Grant: tools · target</th>
                <th scope="col">Resources</th>
                <th scope="col">Write mode</th>
                <th scope="col">Budget now</th>
                <th scope="col">Expires</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {treeOrder(result.data.items).map((grant) => {
                const title = grantTitle(grant, { pod: podName, agents });
                // A consent's child grant: the application (MCP host) that holds it, as it named itself.
                const host = grant.oauthClient;
                return (
                  <tr key={grant.id} data-depth={grant.depth}>
                    <th scope="row" className={`depth-${Math.min(grant.depth, 6)}`}>
                      {grant.depth > 0 && <span aria-hidden="true">└ </span>}
                      <Link to={`/grants/${encodeURIComponent(grant.id)}/calls`}>{title}</Link> <CopyId id={grant.id} />
                      {host && (
                        <span className="held-by">
                          held by application <VisibleText text={host.name} />
                        </span>
                      )}
                    </th>
                    <td data-label="Resources">{resourcesText(grant)}</td>
                    <td data-label="Write mode">{grant.writeMode}</td>
                    <td data-label="Budget now">
                      <Budget api={api} grant={grant} />
                    </td>
                    <td data-label="Expires">
                      <Time iso={grant.expiresAt} />
                    </td>
                    <td data-label="State">
                      <span className={`badge ${grant.status}`}>{grant.status}</span>
                    </td>
                    <td>
                      {grant.status === 'active' && (
                        <RevokeButton
                          api={api}
                          grant={grant}
                          title={host ? `${title} held by ${host.name}` : title}
                          onRevoked={(text) => {
                            setMessage(text);
                            refresh();
                          }}
                        />
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {result.state === 'ready' && <Pager cursors={cursors} next={result.data.nextCursor} onPage={setCursors} label="Grant pages" />}
    </section>
  );
}
