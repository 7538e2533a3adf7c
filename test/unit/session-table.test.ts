import { SessionTable, type SessionEntry } from '../../gateway/src/session-table';

/**
 * The gateway's session table on its own: what a new session displaces, in which order, and that
 * a session with a request in flight (a tool call under way, an open stream) outlives idle ones.
 */
const closed: string[] = [];
const entry = (id: string, agentId: string, rootId = `root-of-${agentId}`): SessionEntry<null> => ({
  id,
  owner: `owner-${id}`,
  agentId,
  rootId,
  value: null,
  close: async () => void closed.push(id),
});
const table = (limits: Partial<ConstructorParameters<typeof SessionTable>[0]> = {}) =>
  new SessionTable<null>({ maxSessions: 100, maxSessionsPerAgent: 100, maxSessionsPerGrantTree: 100, idleMs: 60_000, ...limits });

beforeEach(() => closed.splice(0));

it("an agent at its cap closes its own least recently used session, never another agent's", () => {
  const sessions = table({ maxSessionsPerAgent: 3 });
  sessions.admit(entry('b1', 'b'), 1);
  for (let i = 1; i <= 5; i += 1) sessions.admit(entry(`a${i}`, 'a'), 10 + i);
  expect(closed).toEqual(['a1', 'a2']);
  expect([sessions.countOf('a'), sessions.countOf('b')]).toEqual([3, 1]);
});

it('a busy session is spared while an idle one of the same holder can go', () => {
  const sessions = table({ maxSessionsPerAgent: 2 });
  sessions.admit(entry('a1', 'a'), 1);
  sessions.admit(entry('a2', 'a'), 2);
  const done = sessions.use('a1', 3);
  sessions.use('a2', 4)(); // used, and finished
  sessions.admit(entry('a3', 'a'), 5);
  expect(closed).toEqual(['a2']);
  // Its request over, a1 counts as just used: a3 is now the least recent.
  done();
  sessions.admit(entry('a4', 'a'), 6);
  expect(closed).toEqual(['a2', 'a3']);
});

it('a grant tree at its cap closes its least recently used session, whoever holds it', () => {
  const sessions = table({ maxSessionsPerGrantTree: 3 });
  sessions.admit(entry('a1', 'a', 'tree'), 1);
  sessions.admit(entry('b1', 'b', 'tree'), 2);
  sessions.admit(entry('a2', 'a', 'tree'), 3);
  sessions.admit(entry('c1', 'c', 'elsewhere'), 4);
  sessions.admit(entry('b2', 'b', 'tree'), 5);
  expect(closed).toEqual(['a1']);
  expect(sessions.size).toBe(4);
});

it('a full table displaces the largest holder, so a newcomer always gets in; idle sessions are swept', () => {
  const sessions = table({ maxSessions: 4 });
  sessions.admit(entry('a1', 'a'), 1);
  sessions.admit(entry('a2', 'a'), 2);
  sessions.admit(entry('a3', 'a'), 3);
  sessions.admit(entry('b1', 'b'), 4);
  sessions.admit(entry('c1', 'c'), 5);
  expect(closed).toEqual(['a1']);
  expect(sessions.size).toBe(4);
  // The same owner again replaces its session rather than adding one.
  sessions.admit({ ...entry('c2', 'c'), owner: 'owner-c1' }, 6);
  expect(closed).toEqual(['a1', 'c1']);
  sessions.closeIdle(60_000 + 5);
  expect(closed).toEqual(['a1', 'c1', 'a2', 'a3', 'b1']);
  expect(sessions.size).toBe(1);
});
