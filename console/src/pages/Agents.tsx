import { useState } from 'react';
import type { components } from '@grant-broker/client';
import type { Api } from '../session';
import { VisibleText } from '../parts/ArgsTree';
import { describeError, Empty, Failed, Loading } from '../parts/states';
import { Time } from '../parts/time';
import { useLoad } from '../parts/useLoad';

type Agent = components['schemas']['Agent'];

function Tokens({ api, podId, name }: { api: Api; podId: string; name: string }) {
  const { result } = useLoad(
    () => api.unwrap(api.api.GET('/api/registry/pods/{podId}/agents/{name}/runtime-tokens', { params: { path: { podId, name } } })),
    [api, podId, name],
  );
  if (result.state === 'loading') return <Loading what="runtime tokens" />;
  if (result.state === 'failed') return <p className="hint">Runtime tokens: {describeError(result.error)}</p>;
  if (result.data.items.length === 0) return <p className="hint">No runtime token.</p>;
  return (
    <ul className="tokens" aria-label={`Runtime tokens of ${name}`}>
      {result.data.items.map((token) => (
        <li key={token.id}>
          <code>{token.id}</code> “<VisibleText text={token.name} />” — created <Time iso={token.createdAt} />, last used{' '}
          <Time iso={token.lastUsedAt} />, expires <Time iso={token.expiresAt} />
        </li>
      ))}
    </ul>
  );
}

function AgentCard({ api, agent, onChanged }: { api: Api; agent: Agent; onChanged: (text: string) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const headingId = `agent-${agent.name}`;
  const act = async (action: 'start' | 'stop') => {
    setBusy(true);
    setError(null);
    try {
      const path =
        action === 'stop'
          ? '/api/registry/pods/{podId}/agents/{name}/runtime-stop'
          : '/api/registry/pods/{podId}/agents/{name}/runtime-start';
      await api.unwrap(api.api.POST(path, { params: { path: { podId: agent.podId, name: agent.name } } }));
      onChanged(`${action === 'stop' ? 'Stopped' : 'Started'} ${agent.name}.`);
    } catch (caught) {
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  };
  const stopped = agent.runtime.desiredState === 'stopped';
  return (
    <article className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>
        <VisibleText text={agent.displayName ?? agent.name} /> <code className="quiet">{agent.name}</code>
      </h2>
      {agent.description && (
        <p>
          <VisibleText text={agent.description} />
        </p>
      )}
      <dl className="facts">
        <dt>Runtime</dt>
        <dd>
          <span className={`badge ${agent.runtime.state}`}>{agent.runtime.state}</span> (asked: {agent.runtime.desiredState}, since{' '}
          <Time iso={agent.runtime.changedAt} />)
        </dd>
        <dt>Last poll</dt>
        <dd>
          <Time iso={agent.runtime.lastPolledAt} />
        </dd>
        <dt>Seat</dt>
        <dd>
          <code>{agent.agentId}</code>
        </dd>
      </dl>
      <h3>Runtime tokens</h3>
      <Tokens api={api} podId={agent.podId} name={agent.name} />
      <div className="buttons">
        {stopped ? (
          <button type="button" className="primary" disabled={busy} onClick={() => void act('start')}>
            Start
          </button>
        ) : (
          <button type="button" className="danger" disabled={busy} onClick={() => void act('stop')}>
            Stop
          </button>
        )}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </article>
  );
}

export function AgentsPage({ api, podId }: { api: Api; podId: string }) {
  const [message, setMessage] = useState('');
  const { result, reload, refresh } = useLoad(
    () => api.unwrap(api.api.GET('/api/registry/pods/{podId}/agents', { params: { path: { podId }, query: { limit: 200 } } })),
    [api, podId],
  );
  return (
    <section aria-labelledby="agents-title">
      <h1 id="agents-title">Agents</h1>
      <p className="hint">
        Stopping an agent is the kill switch: from the next check on, the broker denies its calls (<code>runtime_stopped</code>).
      </p>
      <p className="sr-status" role="status" aria-live="polite">
        {message}
      </p>
      {result.state === 'loading' && <Loading what="agents" />}
      {result.state === 'failed' && <Failed error={result.error} retry={reload} />}
      {result.state === 'ready' && result.data.items.length === 0 && (
        <Empty>
          <p>No agent is installed in this pod.</p>
        </Empty>
      )}
      {result.state === 'ready' && (
        <div className="cards">
          {result.data.items.map((agent) => (
            <AgentCard
              key={agent.name}
              api={api}
              agent={agent}
              onChanged={(text) => {
                setMessage(text);
                refresh();
              }}
            />
          ))}
        </div>
      )}
    </section>
  );
}
