/** How many MCP sessions the gateway keeps, in all and per holder, and for how long unused. */
export interface SessionLimits {
  maxSessions: number;
  maxSessionsPerAgent: number;
  maxSessionsPerGrantTree: number;
  idleMs: number;
}

/** One live session: whose it is (token and grant, the agent, the grant's tree) and how it is used. */
export interface SessionEntry<T> {
  id: string;
  /** The token's digest and the grant: the only caller that may use the session id. */
  owner: string;
  agentId: string;
  rootId: string;
  value: T;
  close(): Promise<void>;
}

interface Live<T> extends SessionEntry<T> {
  lastUsed: number;
  /** Requests of the session being answered now (an open stream counts until it ends). */
  inFlight: number;
}

/**
 * The gateway's sessions, bounded so that no agent and no grant tree can take the table from the
 * others. A session is admitted, never refused: what it displaces is closed first. The same
 * owner's previous session (one session per agent token and grant); at `maxSessionsPerAgent` the
 * agent's own least recently used session, and at `maxSessionsPerGrantTree` the tree's (children
 * of children of a grant all share its root, so attenuating does not escape it); with the table
 * full, a session of the agent holding the most (its least recently used). Idle sessions — no
 * request in flight — go before busy ones. So one agent flooding the table only ever closes its
 * own sessions, and another agent always gets in.
 */
export class SessionTable<T> {
  private readonly byId = new Map<string, Live<T>>();
  private readonly byOwner = new Map<string, string>();
  private readonly byAgent = new Map<string, Set<string>>();
  private readonly byTree = new Map<string, Set<string>>();

  constructor(private readonly limits: SessionLimits) {}

  get size(): number {
    return this.byId.size;
  }

  get(id: string): SessionEntry<T> | undefined {
    return this.byId.get(id);
  }

  /** Sessions per agent now, for an operator's eye and the tests. */
  countOf(agentId: string): number {
    return this.byAgent.get(agentId)?.size ?? 0;
  }

  admit(entry: SessionEntry<T>, now = Date.now()): void {
    const previous = this.byOwner.get(entry.owner);
    if (previous) void this.end(previous);
    const { maxSessions, maxSessionsPerAgent, maxSessionsPerGrantTree } = this.limits;
    while ((this.byAgent.get(entry.agentId)?.size ?? 0) >= maxSessionsPerAgent)
      void this.end(this.leastRecent(this.byAgent.get(entry.agentId)!));
    while ((this.byTree.get(entry.rootId)?.size ?? 0) >= maxSessionsPerGrantTree)
      void this.end(this.leastRecent(this.byTree.get(entry.rootId)!));
    while (this.byId.size >= maxSessions) void this.end(this.leastRecent(this.largestHolding(entry.agentId)));
    this.byId.set(entry.id, { ...entry, lastUsed: now, inFlight: 0 });
    this.byOwner.set(entry.owner, entry.id);
    add(this.byAgent, entry.agentId, entry.id);
    add(this.byTree, entry.rootId, entry.id);
  }

  /** A request of the session begins; the returned function ends it. */
  use(id: string, now = Date.now()): () => void {
    const session = this.byId.get(id);
    if (!session) return () => undefined;
    session.lastUsed = now;
    session.inFlight += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      session.inFlight -= 1;
      session.lastUsed = Date.now();
    };
  }

  /** Forgets the session at once (a new one may take its place) and closes it. */
  async end(id: string): Promise<void> {
    const session = this.byId.get(id);
    if (!session) return;
    this.byId.delete(id);
    if (this.byOwner.get(session.owner) === id) this.byOwner.delete(session.owner);
    remove(this.byAgent, session.agentId, id);
    remove(this.byTree, session.rootId, id);
    await session.close().catch(() => undefined);
  }

  closeIdle(now = Date.now()): void {
    for (const [id, session] of this.byId) if (session.inFlight === 0 && now - session.lastUsed > this.limits.idleMs) void this.end(id);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.byId.keys()].map((id) => this.end(id)));
  }

  /** Of these sessions, the one to close first: idle before busy, then the least recently used. */
  private leastRecent(ids: Iterable<string>): string {
    // Busy sessions rank as if used far in the future: any idle one goes first.
    const rank = (session: Live<T>) => (session.inFlight > 0 ? 1e15 : 0) + session.lastUsed;
    let chosen: Live<T> | undefined;
    for (const id of ids) {
      const session = this.byId.get(id)!;
      if (!chosen || rank(session) < rank(chosen)) chosen = session;
    }
    return chosen!.id;
  }

  /** The sessions of the agent holding the most (the newcomer's own agent when it is one of them). */
  private largestHolding(newcomer: string): Set<string> {
    let largest = this.byAgent.get(newcomer) ?? new Set<string>();
    for (const held of this.byAgent.values()) if (held.size > largest.size) largest = held;
    return largest;
  }
}

function add(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (ids) ids.add(id);
  else index.set(key, new Set([id]));
}

function remove(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (!ids) return;
  ids.delete(id);
  if (ids.size === 0) index.delete(key);
}
