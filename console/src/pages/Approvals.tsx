import { useState } from 'react';
import type { Approval } from '@grant-broker/client';
import type { Api } from '../session';
import { ArgsTree } from '../parts/ArgsTree';
import { CopyId } from '../parts/CopyId';
import { GrantName, PrincipalName, useAllAgentNames } from '../parts/names';
import { describeError, Empty, Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useInboxWatch } from '../parts/useInboxWatch';
import { useLoad } from '../parts/useLoad';

/** What the approvals list adds for a decider: the call's arguments while it waits. */
type ReadableApproval = Approval & { args?: unknown; argsTooLarge?: boolean };

function Arguments({ approval }: { approval: ReadableApproval }) {
  const label = `Arguments of ${approval.tool}`;
  if (approval.argsTooLarge)
    return <p className="warning">The arguments were over 64 KiB and were not kept: only their digest is known.</p>;
  if (!('args' in approval) || approval.args === undefined) {
    return <p className="warning">The arguments of this call are not readable here; only their digest is known.</p>;
  }
  if (approval.args === null) return <p className="warning">The arguments are no longer kept.</p>;
  return <ArgsTree args={approval.args} label={label} />;
}

function ApprovalCard({
  api,
  approval,
  agents,
  onDecided,
}: {
  api: Api;
  approval: ReadableApproval;
  agents: Map<string, string>;
  onDecided: (message: string) => void;
}) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const headingId = `approval-${approval.id}`;
  const decide = async (action: 'approve' | 'deny') => {
    setBusy(true);
    setError(null);
    try {
      const path = action === 'approve' ? '/api/approvals/{approvalId}/approve' : '/api/approvals/{approvalId}/deny';
      await api.unwrap(api.api.POST(path, { params: { path: { approvalId: approval.id } }, body: note ? { note } : {} }));
      onDecided(`${action === 'approve' ? 'Approved' : 'Denied'} ${approval.tool} (${approval.id}).`);
    } catch (caught) {
      setError(describeError(caught));
      setBusy(false);
    }
  };
  return (
    <article className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>
        <code>{approval.tool}</code>
      </h2>
      <dl className="facts">
        <dt>Grant</dt>
        <dd>
          <GrantName api={api} grantId={approval.grantId} />
        </dd>
        <dt>Principal</dt>
        <dd>
          <PrincipalName principal={approval.principal} agents={agents} />
        </dd>
        <dt>Requested</dt>
        <dd>
          <Time iso={approval.requestedAt} />
        </dd>
        <dt>Expires</dt>
        <dd>
          <Time iso={approval.expiresAt} />
        </dd>
        <dt>Approval</dt>
        <dd>
          <CopyId id={approval.id} />
        </dd>
      </dl>
      <h3>Arguments</h3>
      <Arguments approval={approval} />
      <form
        className="decide"
        onSubmit={(event) => {
          event.preventDefault();
        }}
      >
        <label>
          Note
          <input type="text" value={note} maxLength={1000} onChange={(event) => setNote(event.target.value)} disabled={busy} />
        </label>
        <div className="buttons">
          <button type="button" className="primary" disabled={busy} onClick={() => void decide('approve')}>
            Approve
          </button>
          <button type="button" className="danger" disabled={busy} onClick={() => void decide('deny')}>
            Deny
          </button>
        </div>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </article>
  );
}

export function ApprovalsPage({ api }: { api: Api }) {
  const [decided, setDecided] = useState<string[]>([]);
  const [message, setMessage] = useState('');
  const agents = useAllAgentNames(api);
  const { result, reload, refresh } = useLoad(
    () => api.unwrap(api.api.GET('/api/approvals', { params: { query: { state: 'pending', limit: 50 } } })),
    [api],
  );
  // New requests appear without a reload: a long poll answers as soon as one is requested.
  useInboxWatch(api, result.state === 'ready' ? result.data.items[0]?.requestedAt : undefined, refresh);
  const onDecided = (id: string) => (text: string) => {
    setDecided((ids) => [...ids, id]);
    setMessage(text);
    refresh();
  };
  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Pending approvals</h1>
      <p className="hint">Calls waiting for a person, newest first. Read the arguments: approving allows this exact call once.</p>
      <p className="sr-status" role="status" aria-live="polite">
        {message}
      </p>
      {result.state === 'loading' && <Loading what="approvals" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' &&
        (() => {
          const items = (result.data.items as ReadableApproval[]).filter((a) => !decided.includes(a.id));
          if (items.length === 0) {
            return (
              <Empty>
                <p>Nothing waits for you. New requests appear here on their own.</p>
              </Empty>
            );
          }
          return (
            <div className="cards">
              {result.data.nextCursor && <p className="hint">Showing the 50 newest; decide these to see older ones.</p>}
              {items.map((approval) => (
                <ApprovalCard key={approval.id} api={api} approval={approval} agents={agents} onDecided={onDecided(approval.id)} />
              ))}
            </div>
          );
        })()}
    </section>
  );
}
