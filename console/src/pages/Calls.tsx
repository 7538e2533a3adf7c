import { useState, type FormEvent } from 'react';
import type { components } from '@grant-broker/client';
import type { Api } from '../session';
import { CopyId } from '../parts/CopyId';
import { VisibleText } from '../parts/ArgsTree';
import { GrantName, PrincipalName, useAllAgentNames } from '../parts/names';
import { Pager } from '../parts/Pager';
import { describeError, Empty, Failed, Loading } from '../parts/states';
import { absolute, Time } from '../parts/time';
import { useLoad, type Load } from '../parts/useLoad';

type CallRecord = components['schemas']['CallRecord'];
type Outcome = CallRecord['outcome'];

/**
 * The size of the trail's latest signed checkpoint, from the public checkpoint route (a C2SP
 * checkpoint: origin, then size, then root hash). A record whose leaf lies below it is in that
 * checkpoint; any other is pending until the next one is signed.
 */
async function latestCheckpointSize(): Promise<number> {
  const response = await window.fetch('/api/trail/checkpoint', { headers: { Accept: 'text/plain' } });
  if (!response.ok) throw new Error(`The trail's checkpoint could not be read (${response.status}).`);
  const size = Number((await response.text()).split('\n')[1]);
  if (!Number.isSafeInteger(size) || size < 0) throw new Error("The trail's checkpoint could not be read.");
  return size;
}

/** "in checkpoint N", "pending", or why it is not known; a record without a leaf (tree off) has none. */
function proofState(call: CallRecord, checkpoint: Load<number>): string {
  if (call.leafIndex === null || call.leafIndex === undefined) return 'not in the tree';
  if (checkpoint.state === 'loading') return '…';
  if (checkpoint.state === 'failed') return 'unknown';
  return call.leafIndex < checkpoint.data ? `in checkpoint ${checkpoint.data}` : 'pending';
}

/** The search: every field optional; times as the browser's local time, sent as UTC. */
interface Filters {
  outcome: '' | Outcome;
  reason: string;
  tool: string;
  principal: string;
  from: string;
  to: string;
  credential: string;
}

const NO_FILTERS: Filters = { outcome: '', reason: '', tool: '', principal: '', from: '', to: '', credential: '' };
const OUTCOMES: Outcome[] = ['denied', 'awaiting_approval', 'pending', 'succeeded', 'failed'];

function queryOf(filters: Filters) {
  const iso = (local: string) => (local ? new Date(local).toISOString() : undefined);
  const query = {
    outcome: filters.outcome || undefined,
    reason: filters.reason.trim() || undefined,
    tool: filters.tool.trim() || undefined,
    principal: filters.principal.trim() || undefined,
    from: iso(filters.from),
    to: iso(filters.to),
    credential: filters.credential.trim() || undefined,
  };
  return Object.fromEntries(Object.entries(query).filter(([, value]) => value !== undefined)) as Partial<Record<keyof Filters, string>>;
}

/** One record in full: its approval as decided, and the calls that received the same credential. */
function Detail({ api, call, proof, onLineage }: { api: Api; call: CallRecord; proof: string; onLineage: (fingerprint: string) => void }) {
  const approvalId = call.approvalId?.startsWith('apr_') ? call.approvalId : null;
  const approval = useLoad(
    async () => (approvalId ? api.unwrap(api.api.GET('/api/approvals/{approvalId}', { params: { path: { approvalId } } })) : null),
    [api, approvalId],
  );
  return (
    <dl className="facts detail" aria-label={`Call ${call.id}`}>
      <dt>Call</dt>
      <dd>
        <CopyId id={call.id} />
      </dd>
      <dt>Checked</dt>
      <dd>{absolute(call.requestedAt)}</dd>
      <dt>Outcome</dt>
      <dd>
        {call.outcome.replaceAll('_', ' ')}
        {call.completedAt ? `, reported ${absolute(call.completedAt)}` : ''}
        {call.durationMs !== null ? ` (the tool took ${call.durationMs} ms)` : ''}
      </dd>
      <dt>Why</dt>
      <dd>
        <code>{call.reason}</code>
        {call.outcome === 'denied' ? ' — the check answered this reason with its explanation; the decision log keeps both.' : ''}
      </dd>
      <dt>Arguments</dt>
      <dd>
        <code>{call.argsDigest}</code> (never stored: only their digest)
      </dd>
      <dt>Approval</dt>
      <dd>
        {!approvalId && 'none'}
        {approvalId && approval.result.state === 'loading' && '…'}
        {approvalId && approval.result.state === 'failed' && describeError(approval.result.error)}
        {approvalId && approval.result.state === 'ready' && approval.result.data && (
          <>
            <CopyId id={approvalId} /> {approval.result.data.state}
            {approval.result.data.decidedBy ? ` by ${approval.result.data.decidedBy}` : ''}
            {approval.result.data.decidedAt ? `, ${absolute(approval.result.data.decidedAt)}` : ''}
            {approval.result.data.note ? ` — “${approval.result.data.note}”` : ''}
          </>
        )}
      </dd>
      <dt>Proof</dt>
      <dd>{call.leafIndex === null || call.leafIndex === undefined ? 'not in the tree' : `leaf ${call.leafIndex}, ${proof}`}</dd>
      <dt>Credential</dt>
      <dd>
        {call.credential ? (
          <>
            <code>{call.credential.fingerprint}</code>, expires {absolute(call.credential.expiresAt)}{' '}
            <button type="button" className="small" onClick={() => onLineage(call.credential!.fingerprint)}>
              Calls with this credential
            </button>
          </>
        ) : (
          'none minted'
        )}
      </dd>
    </dl>
  );
}

export function CallsPage({ api, grantId }: { api: Api; grantId: string }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [open, setOpen] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  const agents = useAllAgentNames(api);
  // Read once per page load: a proof state is as fresh as the page, like the rows themselves.
  const checkpoint = useLoad(latestCheckpointSize, []).result;
  const grant = useLoad(() => api.unwrap(api.api.GET('/api/grants/{grantId}', { params: { path: { grantId } } })), [api, grantId]);
  const { result, reload } = useLoad(
    () =>
      api.unwrap(
        api.api.GET('/api/grants/{grantId}/calls', {
          params: { path: { grantId }, query: { limit: 50, ...queryOf(filters), ...(cursor ? { cursor } : {}) } as never },
        }),
      ),
    [api, grantId, cursor, filters],
  );
  const search = (next: Filters) => {
    setDraft(next);
    setFilters(next);
    setCursors([]);
    setOpen(null);
  };
  const field = (name: keyof Filters) => ({
    value: draft[name],
    onChange: (event: { target: { value: string } }) => setDraft({ ...draft, [name]: event.target.value }),
  });
  const filtered = Object.keys(queryOf(filters)).length > 0;
  return (
    <section aria-labelledby="calls-title">
      <h1 id="calls-title">Calls</h1>
      <p>
        Of the grant <GrantName api={api} grantId={grantId} />
      </p>
      {grant.result.state === 'ready' && (
        <p className="hint">
          Tools {grant.result.data.tools.join(', ')}; write mode {grant.result.data.writeMode}; {grant.result.data.status}.
          {grant.result.data.oauthClient && (
            <>
              {' '}
              Held by application <VisibleText text={grant.result.data.oauthClient.name} /> (client id{' '}
              <code>
                <VisibleText text={grant.result.data.oauthClient.clientId} />
              </code>
              ), which a person connected with consent.
            </>
          )}
        </p>
      )}
      <form
        className="filters"
        role="search"
        aria-label="Search the calls"
        onSubmit={(event: FormEvent) => {
          event.preventDefault();
          search(draft);
        }}
      >
        <label>
          Outcome
          <select {...field('outcome')}>
            <option value="">any</option>
            {OUTCOMES.map((outcome) => (
              <option key={outcome} value={outcome}>
                {/* The filter reads the outcome recorded at the check, so a held call stays under it once decided. */}
                {outcome === 'awaiting_approval' ? 'held for approval (waiting or decided)' : outcome.replaceAll('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          Reason
          <input type="text" {...field('reason')} placeholder="tool_not_allowed" spellCheck={false} />
        </label>
        <label>
          Tool
          <input type="text" {...field('tool')} placeholder="repos.read_file" spellCheck={false} />
        </label>
        <label>
          Principal
          <input type="text" {...field('principal')} placeholder="a user or agent id" spellCheck={false} />
        </label>
        <label>
          From
          <input type="datetime-local" {...field('from')} />
        </label>
        <label>
          To
          <input type="datetime-local" {...field('to')} />
        </label>
        <label>
          Credential
          <input type="text" {...field('credential')} placeholder="sha256:…" spellCheck={false} />
        </label>
        <div className="buttons">
          <button type="submit" className="primary">
            Search
          </button>
          <button type="button" onClick={() => search(NO_FILTERS)} disabled={!filtered && draft === NO_FILTERS}>
            Clear
          </button>
        </div>
      </form>
      {result.state === 'loading' && <Loading what="calls" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' && result.data.items.length === 0 && (
        <Empty>
          <p>{filtered ? 'No call of this grant matches the search.' : 'No call has been checked on this grant yet.'}</p>
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
                <th scope="col">Proof</th>
                <th scope="col">
                  <span className="sr-only">Details</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {result.data.items.flatMap((call) => [
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
                  <td data-label="Proof">{proofState(call, checkpoint)}</td>
                  <td>
                    <button
                      type="button"
                      className="small"
                      aria-expanded={open === call.id}
                      aria-controls={`detail-${call.id}`}
                      onClick={() => setOpen(open === call.id ? null : call.id)}
                    >
                      Details
                    </button>
                  </td>
                </tr>,
                ...(open === call.id
                  ? [
                      <tr key={`${call.id}-detail`} id={`detail-${call.id}`}>
                        <td colSpan={8}>
                          <Detail
                            api={api}
                            call={call}
                            proof={proofState(call, checkpoint)}
                            onLineage={(fingerprint) => search({ ...NO_FILTERS, credential: fingerprint })}
                          />
                        </td>
                      </tr>,
                    ]
                  : []),
              ])}
            </tbody>
          </table>
        </div>
      )}
      {result.state === 'ready' && <Pager cursors={cursors} next={result.data.nextCursor} onPage={setCursors} label="Call pages" />}
    </section>
  );
}
